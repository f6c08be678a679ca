// optimizer_trace OUT_DIR: runs every optimizer table entry (train/optimizer.h) for a few steps
// on fixed inputs with the CPU backend and writes, per trace, OUT_DIR/<trace>/:
//   meta.json      the optimizer, its hyper-parameters and slots, the variables (element count,
//                  whether weight-decayed), the weight decay, each step's learning rate
//   w0.npy         the starting weights [n]
//   grads.npy      each step's gradient [steps, n], as the trainer hands it to the optimizer
//   weights.npy    the weights after each step [steps, n]
//   <slot>.npy     each slot after each step [steps, n] (Adam.npy, Adam_1.npy, ...)
// tests/interop/check_optimizers.py replays the same steps with torch.optim.AdamW and NumPy
// (LARS from the paper, TensorFlow's formulas for the others) and compares.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "infer/npy.h"
#include "train/optimizer.h"

namespace ic {
namespace {

constexpr int kSteps = 8;

struct Trace {
  const char* name;       // the output folder
  const char* optimizer;  // the table entry
  bool nesterov;
  float base_learning_rate, weight_decay;
};

// Three kernels (weight-decayed) then a bias and a batch-norm gamma, as ParamLayout orders them.
struct Variable {
  size_t size;
  bool decayed;
};
const std::vector<Variable> kVariables = {
    {288, true}, {1200, true}, {50, true}, {40, false}, {7, false}};

std::string number(double v) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
}

Status write_rows(const std::string& path, const std::vector<std::vector<float>>& rows) {
  NpyArray a;
  a.shape = {static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows.at(0).size())};
  for (const auto& r : rows) a.data.insert(a.data.end(), r.begin(), r.end());
  return write_npy(path, a);
}

Status run_trace(Backend& backend, const Trace& t, const std::string& dir) {
  const Optimizer* optimizer = find_optimizer(t.optimizer);
  if (optimizer == nullptr) return error("no optimizer ", t.optimizer);
  std::filesystem::create_directories(dir);
  size_t n = 0, decayed = 0;
  std::vector<size_t> sizes;
  for (const Variable& v : kVariables) {
    n += v.size;
    decayed += v.decayed ? v.size : 0;
    sizes.push_back(v.size);
  }
  std::mt19937 rng(2017);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> w(n);
  for (float& x : w) x = 0.5f * uniform(rng);
  IC_RETURN_IF_ERROR(write_npy(dir + "/w0.npy", {{static_cast<int64_t>(n)}, w}));
  std::vector<std::vector<float>> slots;
  for (const OptimizerSlot& s : optimizer->slots) slots.emplace_back(n, s.initial_value);

  std::vector<std::vector<float>> grads, weights;
  std::vector<std::vector<std::vector<float>>> slot_rows(slots.size());
  std::vector<float> rates;
  for (int k = 0; k < kSteps; ++k) {
    std::vector<float> g(n);
    for (float& x : g) x = 0.1f * uniform(rng);
    if (k % 2 == 1) {  // the third kernel has no gradient every other step (LARS: ratio 1)
      const size_t third = kVariables[0].size + kVariables[1].size;
      std::fill(g.begin() + third, g.begin() + third + kVariables[2].size, 0.f);
    }
    grads.push_back(g);
    const float lr = t.base_learning_rate / (1.f + 0.25f * static_cast<float>(k));
    rates.push_back(lr);
    OptimizerStep step;
    step.weights = w.data();
    step.grads = g.data();
    for (size_t s = 0; s < slots.size(); ++s) step.slots[s] = slots[s].data();
    step.count = n;
    step.decayed = decayed;
    step.variables = sizes;
    step.learning_rate = lr;
    step.weight_decay = t.weight_decay;
    step.step = k + 1;
    step.nesterov = t.nesterov;
    optimizer->apply(backend, step);
    weights.push_back(w);
    for (size_t s = 0; s < slots.size(); ++s) slot_rows[s].push_back(slots[s]);
  }
  IC_RETURN_IF_ERROR(write_rows(dir + "/grads.npy", grads));
  IC_RETURN_IF_ERROR(write_rows(dir + "/weights.npy", weights));
  for (size_t s = 0; s < slots.size(); ++s) {
    IC_RETURN_IF_ERROR(write_rows(dir + "/" + optimizer->slots[s].suffix + ".npy", slot_rows[s]));
  }

  std::string json = "{\"optimizer\": \"" + std::string(optimizer->name) + "\", ";
  json += "\"nesterov\": " + std::string(t.nesterov ? "true" : "false") + ", ";
  json += "\"weight_decay\": " + number(t.weight_decay) + ", \"learning_rates\": [";
  for (size_t k = 0; k < rates.size(); ++k) json += (k ? ", " : "") + number(rates[k]);
  json += "], \"hyperparameters\": {";
  for (size_t h = 0; h < optimizer->hyperparameters.size(); ++h) {
    json += (h ? ", \"" : "\"") + std::string(optimizer->hyperparameters[h].name) +
            "\": " + number(optimizer->hyperparameters[h].value);
  }
  json += "}, \"slots\": [";
  for (size_t s = 0; s < optimizer->slots.size(); ++s) {
    json += (s ? ", [\"" : "[\"") + std::string(optimizer->slots[s].suffix) + "\", " +
            number(optimizer->slots[s].initial_value) + "]";
  }
  json += "], \"variables\": [";
  for (size_t v = 0; v < kVariables.size(); ++v) {
    json += (v ? ", [" : "[") + std::to_string(kVariables[v].size) + ", " +
            (kVariables[v].decayed ? "true" : "false") + "]";
  }
  json += "]}\n";
  std::ofstream(dir + "/meta.json") << json;
  return Status();
}

}  // namespace
}  // namespace ic

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: optimizer_trace OUT_DIR\n");
    return 2;
  }
  ic::BackendOptions options;
  options.num_threads = 1;
  auto backend = ic::make_cpu_backend(options);
  if (!backend.ok()) {
    std::fprintf(stderr, "optimizer_trace: %s\n", backend.status().message().c_str());
    return 1;
  }
  const ic::Trace traces[] = {
      {"sgd", "sgd", false, 0.1f, 4e-4f},
      {"momentum", "momentum", false, 0.1f, 4e-4f},
      {"momentum_nesterov", "momentum", true, 0.1f, 4e-4f},
      {"RMS", "RMS", false, 0.01f, 4e-4f},
      {"adamw", "adamw", false, 0.01f, 0.01f},
      {"lars", "lars", false, 5.f, 1e-3f},
  };
  for (const ic::Trace& t : traces) {
    const ic::Status s = ic::run_trace(**backend, t, std::string(argv[1]) + "/" + t.name);
    if (!s.ok()) {
      std::fprintf(stderr, "optimizer_trace: %s: %s\n", t.name, s.message().c_str());
      return 1;
    }
  }
  return 0;
}
