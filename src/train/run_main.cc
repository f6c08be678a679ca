#include "train/run_main.h"

#include <iostream>

#include "backend/backend.h"
#include "cli/backend_options.h"
#include "core/exit_code.h"
#include "core/host_memory.h"
#include "core/stop_signal.h"
#include "dist/communicator.h"
#include "io/checkpoint_dir.h"
#include "train/run_loop.h"
#include "train/train_flags.h"

namespace ic {
namespace {

// --device wins; otherwise --use_tpu=true means "the accelerator": the first GPU when this
// build and machine have one, else the CPU with a one-line notice. Several processes on one
// machine (mpirun) take one GPU each ("cuda" without an index), or share the cores.
Result<std::unique_ptr<Backend>> choose_backend(const std::string& program,
                                                const RunOptions& options, bool say_notices) {
  LocalProcess local;
  local.index = local_process_index(&local.count);
  const bool accelerator_if_any =
      options.device.kind == DeviceChoice::Kind::unset && options.use_tpu;
  DeviceChoice device = options.device;
  if (device.kind == DeviceChoice::Kind::unset) {
    device.kind = options.use_tpu ? DeviceChoice::Kind::cuda : DeviceChoice::Kind::cpu;
  }
  IC_ASSIGN_OR_RETURN(BackendChoice chosen,
                      backend_options_for(device, options.num_threads, local));
  if (say_notices && !chosen.notice.empty()) {
    std::cout << program << ": " << chosen.notice << std::endl;
  }
  Result<std::unique_ptr<Backend>> backend = make_backend(chosen.options);
  if (backend.ok() || !accelerator_if_any) return backend;
  if (say_notices) {
    std::cout << "--use_tpu: " << backend.status().message() << "; running on the CPU" << std::endl;
  }
  chosen.options.kind = DeviceKind::cpu;
  return make_backend(chosen.options);
}

// --export_dir after a run: model_dir's newest checkpoint.
Result<std::string> export_newest(const std::string& model_dir, const std::string& export_dir,
                                  const CheckpointExporter& exporter) {
  if (!exporter.export_checkpoint) return error("this program was built without the export");
  IC_ASSIGN_OR_RETURN(std::optional<std::string> newest, latest_checkpoint(model_dir));
  if (!newest) return not_found("no checkpoint in ", model_dir, " to export");
  return exporter.export_checkpoint(model_dir, *newest, export_dir, {});
}

}  // namespace

int run_main(const std::string& model, int argc, char** argv, const CheckpointExporter& exporter,
             Communicator* communicator) {
  const std::string program = model;
  bool help = false;
  Result<RunOptions> options = parse_run_options(model, argc, argv, &help);
  if (help) {
    const Result<std::string> text = trainer_help(model);
    if (!text.ok()) {
      std::cerr << program << ": " << text.status().message() << std::endl;
      return exit_code_for(text.status());
    }
    std::cout << *text;
    return 0;
  }
  if (!options.ok()) {
    std::cerr << program << ": " << options.status().message() << std::endl;
    // Whatever the parser's error says, the command line is what is wrong.
    return exit_code_for(StatusCode::invalid_argument);
  }
  if (const Status fits = check_memory_fits(*options, physical_memory_bytes()); !fits.ok()) {
    std::cerr << program << ": " << fits.message() << std::endl;
    return exit_code_for(fits);
  }
  if (options->mode == Mode::summary) {
    Result<std::unique_ptr<Backend>> none = make_backend(BackendOptions{});
    if (!none.ok()) {
      std::cerr << program << ": " << none.status().message() << std::endl;
      return exit_code_for(none.status());
    }
    if (!options->export_dir.empty()) {
      std::cout << "Note: --export_dir is not used by --mode=summary (it writes no checkpoint)"
                << std::endl;
    }
    Status status = run_mode(*options, **none, std::cout);
    if (!status.ok()) std::cerr << program << ": " << status.message() << std::endl;
    return exit_code_for(status);
  }
  std::unique_ptr<Communicator> from_launcher;
  if (communicator == nullptr) {
    Result<std::unique_ptr<Communicator>> made = communicator_from_environment();
    if (!made.ok()) {
      std::cerr << program << ": " << made.status().message() << std::endl;
      return exit_code_for(made.status());
    }
    from_launcher = std::move(*made);
    communicator = from_launcher.get();
  }
  Communicator& comm = *communicator;
  // An error on one replica stops them all: the others would wait in a collective forever.
  auto fail = [&](const Status& status) {
    std::cerr << program;
    if (comm.size() > 1) std::cerr << " (replica " << comm.rank() << ")";
    std::cerr << ": " << status.message() << std::endl;
    if (comm.size() > 1) comm.abort(exit_code_for(status));
    return exit_code_for(status);
  };
  Result<std::unique_ptr<Backend>> backend = choose_backend(program, *options, comm.rank() == 0);
  if (!backend.ok()) return fail(backend.status());
  if (comm.rank() == 0) {
    std::cout << "Running " << model << " --mode=" << choice_name(options->mode) << " on "
              << (*backend)->description();
    if (comm.size() > 1) std::cout << ", data parallel over " << comm.description();
    std::cout << std::endl;
  }
  // --export_best: the leader compares each evaluation with the best export so far.
  std::unique_ptr<BestExporter> best;
  EvaluationListener on_evaluation;
  if (options->export_best != ExportBestMetric::none && comm.rank() == 0) {
    Result<std::unique_ptr<BestExporter>> opened = BestExporter::open(
        options->export_best, options->export_best_mode, options->exports_to_keep,
        options->model_dir, options->export_dir, exporter, std::cout);
    if (!opened.ok()) return fail(opened.status());
    best = std::move(*opened);
    on_evaluation = [&best](const EvaluationOutcome& outcome) { return best->consider(outcome); };
  }
  install_stop_signal_handlers(program.c_str(), options->stop_timeout_secs);
  Status status;
  try {
    status = run_mode(*options, **backend, std::cout, &comm, on_evaluation);
  } catch (const std::exception& e) {  // and then abort the other replicas too, via fail()
    status = error("unexpected error: ", e.what());
  }
  if (!status.ok()) return fail(status);
  if (best) {
    if (best->best())
      std::cout << "--export_best: the best export is " << best->best()->first << std::endl;
  } else if (!options->export_dir.empty() && comm.rank() == 0) {
    Result<std::string> exported = export_newest(options->model_dir, options->export_dir, exporter);
    if (!exported.ok()) return fail(exported.status().with_context("--export_dir"));
    std::cout << "Exported the newest checkpoint of " << options->model_dir
              << " as a SavedModel to " << *exported << std::endl;
  }
  return 0;
}

}  // namespace ic
