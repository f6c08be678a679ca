// sweep: trains every variant of a sweep config (train/sweep_config.h) as its own
// train_and_eval run, ranks them by their best evaluation, and copies the winner's best export
// to <sweep_dir>/serving/ for serve (docs/variants.md).
//   sweep --sweep_dir=DIR --config=sweep.json [--parallel=K] [--variant_index=I]
//   mpirun -np N sweep --sweep_dir=DIR --config=sweep.json --groups=G
#include "train/sweep.h"

#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "command_line.h"
#include "core/exit_code.h"
#include "core/main_guard.h"
#include "core/openmp_env.h"
#include "core/stop_signal.h"
#include "dist/communicator.h"
#include "export_format_choice.h"
#include "infer/calibration.h"
#include "infer/model_export.h"
#include "io/file_system.h"
#include "models/model.h"
#include "train/sweep_halving.h"

namespace {

struct SweepFlags {
  std::string sweep_dir, config;
  int32_t parallel = 1;
  int32_t cores = 0;
  int64_t variant_index = -1;
  int32_t groups = 1;
  ic::ExportFormat export_format = ic::ExportFormat::saved_model;
  std::string calibration_data;
  int64_t calibration_images = 512;
};

const ic::FlagTable<SweepFlags>& sweep_flags() {
  using namespace ic::flag_entries;
  using O = SweepFlags;
  static const ic::FlagTable<O> table({
      text("sweep_dir", &O::sweep_dir,
           "Directory of the sweep: <variant>/ for each run, leaderboard.csv, serving/ (the "
           "winner, for serve --model_dir)"),
      text("config", &O::config,
           "The sweep config (JSON: trainer, flags, grid or variants, "
           "metric, budget; docs/variants.md)"),
      number("parallel", &O::parallel, at_least(1),
             "Variants trained at once, the cores split between them"),
      number("cores", &O::cores, at_least(0), "Cores to split (0: this machine's)"),
      number("groups", &O::groups, at_least(1),
             "Under mpirun: the job's processes split into this many groups of consecutive "
             "ranks, each training its share of the variants data parallel (the process count "
             "must be a multiple)"),
      number("variant_index", &O::variant_index, at_least(-1),
             "Train only this variant (0-based), as a job array's task does; -1: all, or "
             "$SLURM_ARRAY_TASK_ID when it is set"),
      choice("export_format", &O::export_format,
             "The winner in serving/ as export_model --format writes it: saved_model (its best "
             "export, copied), onnx, safetensors or int8 (calibrated on --calibration_data)"),
      text("calibration_data", &O::calibration_data,
           "--export_format=int8: the TFRecord directory whose train-* images calibrate the "
           "winner (default: the --data_dir it was trained on)"),
      number("calibration_images", &O::calibration_images, at_least(1),
             "--export_format=int8: how many images calibrate"),
  });
  return table;
}

void print_table(const ic::SweepConfig& config, const std::vector<ic::LeaderboardRow>& rows) {
  std::cout << "sweep: leaderboard by " << ic::choice_name(config.metric) << "\n";
  std::cout << std::left << std::setw(5) << "rank" << std::setw(12) << "best" << std::setw(8)
            << "step" << std::setw(9) << "trained" << std::setw(10) << "wall s" << std::setw(10)
            << "img/s"
            << "variant\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const ic::LeaderboardRow& r = rows[i];
    std::cout << std::left << std::setw(5) << i + 1 << std::setw(12) << r.best.value << std::setw(8)
              << r.best.global_step << std::setw(9) << r.train_steps << std::setw(10)
              << std::setprecision(4) << r.wall_seconds << std::setw(10) << r.examples_per_sec
              << r.variant << "\n"
              << std::setprecision(6);
  }
  std::cout << std::flush;
}

int sweep_main(int argc, char** argv) {
  using namespace ic;
  SweepFlags flags;
  const ProgramHelp help{.name = "sweep",
                         .about = "trains the variants of a sweep config and serves the best",
                         .example = "sweep --sweep_dir=DIR --config=sweep.json --parallel=2"};
  if (std::optional<int> exit_code = start_tool(help, sweep_flags(), argc, argv, &flags))
    return *exit_code;
  if (flags.sweep_dir.empty() || flags.config.empty()) {
    std::cerr << "sweep: give --sweep_dir and --config" << std::endl;
    return 2;
  }
  if (flags.variant_index < 0) {
    if (const char* task = std::getenv("SLURM_ARRAY_TASK_ID"); task != nullptr && *task)
      flags.variant_index = std::atoll(task);
  }
  Result<std::string> text = read_file_to_string(flags.config, 1 << 20);
  if (!text.ok()) {
    std::cerr << "sweep: " << text.status().message() << std::endl;
    return exit_code_for(text.status());
  }
  Result<SweepConfig> config = parse_sweep_config(*text, flags.config, model_names());
  if (!config.ok()) {
    std::cerr << "sweep: " << config.status().message() << std::endl;
    return 2;
  }
  // Under mpirun: the job's processes, split into the groups that train the variants.
  std::unique_ptr<Communicator> world, group;
  if (launched_by_mpi()) {
    Result<std::unique_ptr<Communicator>> made = communicator_from_environment();
    if (!made.ok()) {
      std::cerr << "sweep: " << made.status().message() << std::endl;
      return exit_code_for(made.status());
    }
    world = std::move(*made);
    if (world->size() % flags.groups != 0 || flags.parallel > 1) {
      if (world->rank() == 0)
        std::cerr << "sweep: under mpirun the " << world->size() << " processes are split into "
                  << "--groups=" << flags.groups << " groups of equal size (--parallel is for "
                  << "one machine without mpirun)" << std::endl;
      return 2;
    }
    const int per_group = world->size() / flags.groups;
    group = world->split(world->rank() / per_group);
  } else if (flags.groups > 1) {
    std::cerr << "sweep: --groups=" << flags.groups << " needs mpirun (mpirun -np N sweep ...)"
              << std::endl;
    return 2;
  }
  const bool leader = world == nullptr || world->rank() == 0;
  SweepOptions options;
  options.world = world.get();
  options.group = group.get();
  options.groups = flags.groups;
  options.group_index = world ? world->rank() / (world->size() / flags.groups) : 0;
  options.exporter = {export_checkpoint_saved_model, remove_export};
  options.sweep_dir = flags.sweep_dir;
  options.bin_dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  options.parallel = flags.parallel;
  options.cores = flags.cores;
  options.variant_index = flags.variant_index;
  install_stop_signal_handlers("sweep", 3600);
  // Under mpirun each group's first process says what its group trains; the job's first one
  // writes the leaderboard and copies the winner.
  std::ostream quiet(nullptr);
  std::ostream& log = group == nullptr || group->rank() == 0 ? std::cout : quiet;
  if (!leader) {
    const Status ran = run_sweep(*config, options, log);
    return ran.ok() ? 0 : exit_code_for(ran);
  }
  std::cout << "sweep: " << config->variants.size() << " variants of " << config->trainer << ", ";
  if (config->schedule == SweepSchedule::halving) {
    std::cout << "successive halving (eta " << config->eta << ") at steps";
    for (int64_t s : halving_rungs(config->variants.size(), config->eta, config->train_steps,
                                   config->first_rung_steps))
      std::cout << " " << s;
  } else {
    std::cout << config->train_steps << " steps each";
  }
  std::cout << ", ranked by " << choice_name(config->metric);
  if (world)
    std::cout << ", " << flags.groups << " group(s) of " << world->size() / flags.groups
              << " processes";
  std::cout << std::endl;
  const Status ran = run_sweep(*config, options, log);
  if (!ran.ok()) std::cerr << "sweep: " << ran.message() << std::endl;
  Result<std::vector<LeaderboardRow>> rows = read_leaderboard(*config, flags.sweep_dir);
  if (!rows.ok()) {
    std::cerr << "sweep: " << rows.status().message() << std::endl;
    return exit_code_for(rows.status());
  }
  const std::string csv_path = join_path(flags.sweep_dir, "leaderboard.csv");
  if (Status written = write_file_atomically(csv_path, {leaderboard_csv(*config, *rows)});
      !written.ok()) {
    std::cerr << "sweep: " << written.message() << std::endl;
    return exit_code_for(written);
  }
  print_table(*config, *rows);
  std::cout << "sweep: " << rows->size() << " of " << config->variants.size()
            << " variants finished; " << csv_path << std::endl;
  if (!ran.ok()) return exit_code_for(ran);
  if (rows->size() < config->variants.size()) return 0;  // stopped, or one task of an array
  // Another format than the best export's: read it, and export it as export_model would.
  std::optional<WinnerConversion> conversion;
  if (flags.export_format != ExportFormat::saved_model) {
    conversion = WinnerConversion{
        choice_name(flags.export_format),
        [&](const std::string& best_export, const std::string& serving,
            const std::map<std::string, std::string>& extra_files) -> Result<std::string> {
          IC_ASSIGN_OR_RETURN(InferenceModel model,
                              load_for_inference("", join_path(best_export, "saved_model.pb")));
          if (flags.export_format == ExportFormat::int8) {
            CalibrationOptions calibration;
            calibration.data_dir = flags.calibration_data;
            calibration.images = flags.calibration_images;
            IC_RETURN_IF_ERROR(calibrate_on_cpu(model, calibration, flags.cores));
          }
          return export_trained_model(model, serving, flags.export_format, {}, extra_files);
        }};
  }
  Result<std::string> served = export_winner(flags.sweep_dir, rows->front(), conversion);
  if (!served.ok()) {
    std::cerr << "sweep: " << served.status().message() << std::endl;
    return exit_code_for(served.status());
  }
  std::cout << "sweep: the winner, " << rows->front().variant << ", is in " << *served
            << "; serve it with: serve --model_dir=" << join_path(flags.sweep_dir, "serving")
            << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ic::use_short_openmp_spin(argv);  // the trainers it runs in its own processes, under mpirun
  return ic::run_guarded("sweep", [&] { return sweep_main(argc, argv); });
}
