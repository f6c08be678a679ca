// The whole of inception_v3 / inception_v4 / resnet50's main(): flags in (the model's
// defaults), backend chosen, mode run, messages out, exit code back. The edge where Status
// becomes text: errors go to stderr as "<program>: <message>" with exit code 1; a bad
// command line exits 2; --help prints every flag with its default and exits 0.
#pragma once

#include <string>

namespace ic {

int run_main(const std::string& model, int argc, char** argv);

}  // namespace ic
