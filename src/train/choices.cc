#include "train/choices.h"

#include <vector>

namespace ic {

const std::vector<ChoiceName<const Optimizer*>>& optimizer_choice_names() {
  static const std::vector<ChoiceName<const Optimizer*>> names = [] {
    std::vector<ChoiceName<const Optimizer*>> out;
    for (const Optimizer& o : optimizer_table()) out.push_back({&o, o.name});
    return out;
  }();
  return names;
}

}  // namespace ic
