#include "train/run_main.h"

#include <iostream>

#include "backend/backend.h"
#include "train/flag_parser.h"
#include "train/run_loop.h"
#include "train/stop_signal.h"
#include "train/train_flags.h"

namespace ic {
namespace {

// --device wins; otherwise --use_tpu=true means "the accelerator": the first GPU when this
// build and machine have one, else the CPU with a one-line notice.
Result<std::unique_ptr<Backend>> choose_backend(const RunOptions& options) {
  BackendOptions b;
  b.num_threads = options.num_threads;
  if (options.device == "cpu") return make_backend(b);
  if (options.device.rfind("cuda", 0) == 0) {
    b.kind = DeviceKind::cuda;
    b.device_index = options.device.size() > 5 ? std::stoi(options.device.substr(5)) : 0;
    return make_backend(b);
  }
  if (!options.use_tpu) return make_backend(b);
  b.kind = DeviceKind::cuda;
  Result<std::unique_ptr<Backend>> gpu = make_backend(b);
  if (gpu.ok()) return gpu;
  std::cout << "--use_tpu: no GPU available (" << gpu.status().message() << "); running on the CPU"
            << std::endl;
  b.kind = DeviceKind::cpu;
  return make_backend(b);
}

}  // namespace

int run_main(const std::string& model, int argc, char** argv) {
  const std::string program = model;
  bool help = false;
  Result<RunOptions> options = parse_run_options(model, argc, argv, &help);
  if (help) {
    std::cout << flags_help(program, training_flag_files());
    return 0;
  }
  if (!options.ok()) {
    std::cerr << program << ": " << options.status().message() << std::endl;
    return 2;
  }
  if (options->mode == "summary") {
    Result<std::unique_ptr<Backend>> none = make_backend(BackendOptions{});
    if (!none.ok()) {
      std::cerr << program << ": " << none.status().message() << std::endl;
      return 1;
    }
    Status status = run_mode(*options, **none, std::cout);
    if (!status.ok()) std::cerr << program << ": " << status.message() << std::endl;
    return status.ok() ? 0 : 1;
  }
  Result<std::unique_ptr<Backend>> backend = choose_backend(*options);
  if (!backend.ok()) {
    std::cerr << program << ": " << backend.status().message() << std::endl;
    return 1;
  }
  std::cout << "Running " << model << " --mode=" << options->mode << " on "
            << (*backend)->description() << std::endl;
  install_stop_signal_handlers();
  const Status status = run_mode(*options, **backend, std::cout);
  if (!status.ok()) {
    std::cerr << program << ": " << status.message() << std::endl;
    return 1;
  }
  return 0;
}

}  // namespace ic
