#include "train/train_flags.h"

#include "models/model_spec.h"
#include "train/flag_table.h"

namespace ic {

Result<RunOptions> parse_run_options(const std::string& model, int argc, const char* const* argv,
                                     bool* help) {
  IC_ASSIGN_OR_RETURN(RunOptions options, default_run_options(model));
  IC_ASSIGN_OR_RETURN(const WalkedCommandLine walked,
                      trainer_flag_table().parse(argc, argv, options));
  *help = walked.help;
  if (walked.help) return options;
  IC_RETURN_IF_ERROR(expect_no_arguments(walked));
  IC_RETURN_IF_ERROR(validate_run_options(options));
  return options;
}

Result<std::string> trainer_help(const std::string& model) {
  IC_ASSIGN_OR_RETURN(const ModelSpec* spec, find_model_spec(model));
  IC_ASSIGN_OR_RETURN(const RunOptions defaults, default_run_options(model));
  ProgramHelp program;
  program.name = model;
  program.about = spec->about;
  program.example = model +
                    " --mode=train_and_eval --data_dir=TFRECORD_DIR --model_dir=MODEL_DIR"
                    "   (or --use_data=fake)";
  program.defaults_of = model;
  return trainer_flag_table().help(program, defaults);
}

}  // namespace ic
