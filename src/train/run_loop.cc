#include "train/run_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <optional>
#include <sstream>
#include <thread>

#include "core/stop_signal.h"
#include "dist/device_reducer.h"
#include "io/checkpoint_dir.h"
#include "io/checkpoint_recovery.h"
#include "io/event_writer.h"
#include "io/file_system.h"
#include "io/model_dir_lock.h"
#include "models/summary.h"
#include "runtime/checkpoint_checks.h"
#include "train/batch_source.h"
#include "train/recipe.h"
#include "train/resume_state.h"

namespace ic {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string fixed3(double value) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  out << value;
  return out.str();
}

// "3 h 05 min", "12 min 30 s", "45 s".
std::string duration_text(double seconds) {
  const auto total = static_cast<int64_t>(std::max(0.0, seconds) + 0.5);
  std::ostringstream out;
  if (total >= 3600) {
    out << total / 3600 << " h " << std::setw(2) << std::setfill('0') << total % 3600 / 60
        << " min";
  } else if (total >= 60) {
    out << total / 60 << " min " << std::setw(2) << std::setfill('0') << total % 60 << " s";
  } else {
    out << total << " s";
  }
  return out.str();
}

// "progress: 1200 of 213000 steps (0.6%), about 3 h 05 min of training left" at the rate of
// the loop just ended.
// Where this run stops training: --train_steps, or --stop_at_step before it.
int64_t last_step_of_this_run(const RunOptions& o) {
  return o.stop_at_step > 0 ? std::min<int64_t>(o.train_steps, o.stop_at_step) : o.train_steps;
}

std::string progress_line(int64_t step, int64_t train_steps, double steps_per_sec) {
  std::ostringstream out;
  const double percent = train_steps > 0 ? 100.0 * static_cast<double>(step) / train_steps : 100;
  out << "progress: " << step << " of " << train_steps << " steps (" << std::fixed
      << std::setprecision(1) << percent << "%)";
  if (step < train_steps && steps_per_sec > 0) {
    out << ", about " << duration_text(static_cast<double>(train_steps - step) / steps_per_sec)
        << " of training left";
  }
  return out.str();
}

// One run of a mode. Data parallel: every replica (process) runs the same Session; replica 0
// (the leader) alone logs, writes checkpoints and event files. The replicas agree on every
// decision that changes control flow (stopping, saving), so they always call the same
// collectives in the same order.
class Session {
 public:
  Session(const RunOptions& options, Backend& backend, std::ostream& log, Communicator& comm,
          const EvaluationListener& on_evaluation)
      : options_(options),
        on_evaluation_(on_evaluation),
        backend_(backend),
        leader_(comm.rank() == 0),
        log_(leader_ ? log : null_log_),
        meta_(checkpoint_meta_for(options)),
        reducer_(comm, backend) {}

  Status run() {
    if (options_.mode == Mode::summary) return run_summary();
    if (options_.mode == Mode::eval && reducer_.size() > 1) {
      return invalid_argument(
          "--mode=eval follows checkpoints in one process; start it without mpirun");
    }
    if (options_.mode == Mode::train) return run_train();
    if (options_.mode == Mode::eval) return run_eval();
    return run_train_and_eval();
  }

 private:
  Status run_summary();
  Status run_train();
  Status run_eval();
  Status run_train_and_eval();

  Status prepare_training();
  void share_leader_state();
  // --warm_start_from: a fresh run's variables from another checkpoint, logged name by name.
  Status warm_start();
  Status prepare_evaluator();
  Status train_until(int64_t target);
  Status save();
  // Every replica's input position (each reads its own shard of the files), gathered to the
  // leader as checkpoint metadata; empty for fake data.
  // Data parallel: batch norm's moving statistics (and their EMA) follow each replica's own
  // batches. A checkpoint and an evaluation take their mean; the replicas then go on from their
  // own values, so that where checkpoints fall never changes the run, and a checkpoint also keeps
  // every replica's own values (train/resume_state.h) so that a resume continues exactly.
  Result<std::string> evaluate_and_report_averaged();
  Status check_device(const char* during);
  Status write_train_summaries(float loss, double steps_per_sec, double examples_per_sec);
  Result<std::string> evaluate_and_report();
  // This process's stop request (signals); see stop_agreed() for training.
  bool stop_now() {
    if (stop_requested()) {
      stopped_ = true;
      acknowledge_stop();  // acting on it now: the forced-exit timeout no longer applies
    }
    return stopped_;
  }
  // True on every replica when any was asked to stop.
  bool stop_agreed() {
    if (reducer_.any(stop_now())) stopped_ = true;
    return stopped_;
  }

  // Tells the listener, on the leader, what the evaluation just finished scored.
  Status report_evaluation(const std::string& checkpoint);

  const RunOptions& options_;
  const EvaluationListener& on_evaluation_;
  std::optional<EvaluationOutcome> last_scores_;  // the leader's latest evaluation
  Backend& backend_;
  const bool leader_;
  std::ostream null_log_{nullptr};  // what the other replicas log to: nothing
  std::ostream& log_;
  CheckpointMeta meta_;
  DeviceReducer reducer_;
  double all_reduce_seconds_logged_ = 0;  // reducer_'s count at the last training log line
  TrainRecipe recipe_;
  Graph train_graph_, eval_graph_;
  std::unique_ptr<ModelState> state_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<Evaluator> evaluator_;
  InputPipeline::Stats input_counted_;  // training input's counts at the last loop's end
  std::unique_ptr<BatchSource> train_source_;
  std::unique_ptr<EventWriter> train_events_, eval_events_;
  std::optional<ModelDirLock> lock_;  // train modes, leader only
  // This run's id (io/checkpoint_dir.h kRunIdKey): random at its first start, read back from
  // the checkpoint it resumes from, so a run never replaces another run's checkpoint.
  std::string run_id_;
  int64_t last_saved_step_ = -1, last_summary_step_ = -1;
  Clock::time_point last_save_time_ = Clock::now();
  bool stopped_ = false;
};

Status Session::run_summary() {
  IC_ASSIGN_OR_RETURN(ModelOptions m, model_options_for(options_, false, 1));
  m.batch_size = 1;
  m.build_losses = false;
  IC_ASSIGN_OR_RETURN(Graph graph, build_model(m));
  print_summary(graph, log_);
  return Status();
}

Status Session::prepare_training() {
  IC_ASSIGN_OR_RETURN(recipe_, train_recipe_for(options_));
  IC_ASSIGN_OR_RETURN(recipe_.micro_batches, micro_batches_for(options_, reducer_.size()));
  IC_ASSIGN_OR_RETURN(ModelOptions m, model_options_for(options_, true, reducer_.size()));
  m.activations = activations_for(options_.precision, backend_);
  IC_ASSIGN_OR_RETURN(train_graph_, build_model(m));
  IC_ASSIGN_OR_RETURN(state_, ModelState::create(backend_, train_graph_, recipe_.optimizer, true,
                                                 options_.moving_average));
  Status made = make_dirs(options_.model_dir);
  if (!made.ok()) return made.with_context("cannot create --model_dir");
  // The leader writes the model_dir (the other replicas share it); nobody else may.
  // A bucket has no locks (docs/tutorial.md): one trainer per gs:// model_dir is up to the user.
  if (const std::optional<std::string> local = local_path(options_.model_dir); leader_ && local) {
    IC_ASSIGN_OR_RETURN(lock_, ModelDirLock::acquire(*local));
  }
  // The newest usable checkpoint, recovered from the files when the index is lost or the
  // newest save is damaged (io/checkpoint_recovery.h).
  IC_ASSIGN_OR_RETURN(std::optional<ResumePoint> resume,
                      find_resume_point(options_.model_dir, [](const CheckpointContents& file,
                                                               const std::string& path) {
                        return checked_checkpoint_meta(file, path).status();
                      }));
  std::optional<std::string> resume_position;  // this replica's, when the checkpoint has one
  std::string resume_path;
  if (resume) {
    for (const std::string& note : resume->notes) log_ << note << "\n";
    const std::string& latest = resume->path;
    const CheckpointContents& file = resume->contents;
    IC_ASSIGN_OR_RETURN(CheckpointMeta saved, parse_checkpoint_metadata(file.metadata, latest));
    IC_RETURN_IF_ERROR(check_compatible(saved, meta_, latest));
    const auto run_id = file.metadata.find(kRunIdKey);
    run_id_ = run_id != file.metadata.end() ? run_id->second : new_run_id();
    const auto position = file.metadata.find(input_position_key(reducer_.rank()));
    if (position != file.metadata.end()) {
      resume_position = position->second;
    } else if (options_.use_data == UseData::real) {
      log_ << latest << " holds no input position (written by an older version or another "
           << "number of replicas): the input stream starts afresh" << std::endl;
    }
    std::vector<std::string> notes;
    IC_RETURN_IF_ERROR(state_->restore_for_training(file, latest, &notes));
    for (const std::string& note : notes) log_ << note << "\n";
    log_ << "Restoring parameters from " << latest << " (global step " << state_->global_step << ")"
         << std::endl;
    last_saved_step_ = state_->global_step;
    if (!options_.warm_start_from.empty()) {
      log_ << "Not warm-starting from " << options_.warm_start_from
           << ": resuming from the model_dir's own checkpoint" << std::endl;
    }
    resume_path = latest;
  } else {
    run_id_ = new_run_id();
    IC_RETURN_IF_ERROR(state_->initialize(static_cast<uint64_t>(options_.seed)));
    if (!options_.warm_start_from.empty()) IC_RETURN_IF_ERROR(warm_start());
  }
  share_leader_state();
  if (resume && reducer_.size() > 1) {
    const std::string name = kReplicaStatsPrefix + std::to_string(reducer_.rank());
    const TensorEntry* own = resume->contents.find(name);
    const size_t count = moving_statistics_count(*state_);
    if (own == nullptr || own->dtype != DType::f32 || own->bytes.size() != count * sizeof(float)) {
      log_ << resume->path << " holds no moving statistics of each replica (" << name
           << "): the replicas go on from their mean" << std::endl;
    } else {
      std::vector<float> values(count);
      std::memcpy(values.data(), own->bytes.data(), own->bytes.size());
      restore_moving_statistics(*state_, values);
    }
  }
  IC_ASSIGN_OR_RETURN(trainer_, Trainer::create(*state_, train_graph_, recipe_, &reducer_));
  std::string notice;
  IC_ASSIGN_OR_RETURN(
      train_source_,
      make_batch_source(options_, true, trainer_->batch_size(), reducer_.rank(), reducer_.size(),
                        resume_position ? &*resume_position : nullptr, resume_path, &notice));
  if (!notice.empty()) log_ << resume_path << ": " << notice << std::endl;
  log_ << trainer_->memory_estimate() << std::endl;
  log_ << trainer_->trainable_summary() << std::endl;
  if (leader_) {
    IC_ASSIGN_OR_RETURN(train_events_, EventWriter::create(options_.model_dir));
  }
  last_save_time_ = Clock::now();
  return Status();
}

Status Session::warm_start() {
  std::string path = options_.warm_start_from;
  IC_ASSIGN_OR_RETURN(const bool is_dir, path_is_directory(path));
  if (is_dir) {
    IC_ASSIGN_OR_RETURN(std::optional<std::string> latest, latest_checkpoint(path));
    if (!latest) return not_found("--warm_start_from=", path, ": no checkpoint in that directory");
    path = *latest;
  }
  IC_ASSIGN_OR_RETURN(CheckpointContents file, read_checkpoint(path));
  std::vector<std::string> loaded, skipped;
  IC_RETURN_IF_ERROR(state_->warm_start(file, path, &loaded, &skipped));
  log_ << "Warm-starting from " << path << ": " << loaded.size() << " of "
       << loaded.size() + skipped.size() << " variables loaded, " << skipped.size()
       << " start fresh" << std::endl;
  for (const std::string& name : loaded) log_ << "  loaded " << name << "\n";
  for (const std::string& line : skipped) log_ << "  fresh  " << line << "\n";
  log_ << std::flush;
  return Status();
}

// Replicas start from the leader's values (its initialisation or the checkpoint it read), so
// that identical averaged updates keep them identical.
void Session::share_leader_state() {
  if (reducer_.size() == 1) return;
  const ParamLayout& layout = state_->layout();
  for (float* arena : {state_->weights(), state_->ema_weights()}) {
    if (arena != nullptr) reducer_.broadcast(arena, layout.trainable_count, 0);
  }
  for (size_t k = 0; k < state_->slot_count(); ++k) {
    reducer_.broadcast(state_->slot(k), layout.trainable_count, 0);
  }
  for (float* arena : {state_->state(), state_->ema_state()}) {
    if (arena != nullptr) reducer_.broadcast(arena, layout.state_count, 0);
  }
  reducer_.comm().broadcast(&state_->global_step, sizeof(state_->global_step), 0);
}

Status Session::prepare_evaluator() {
  IC_ASSIGN_OR_RETURN(ModelOptions m, model_options_for(options_, false, reducer_.size()));
  m.activations = activations_for(options_.precision, backend_);
  IC_ASSIGN_OR_RETURN(eval_graph_, build_model(m));
  if (!state_) {  // --mode=eval: only the values evaluated with
    IC_ASSIGN_OR_RETURN(
        state_, ModelState::create(backend_, eval_graph_, options_.optimizer, false, false));
  }
  IC_ASSIGN_OR_RETURN(evaluator_, Evaluator::create(*state_, eval_graph_,
                                                    static_cast<float>(options_.weight_decay)));
  return Status();
}

Status Session::save() {
  // Weights and their EMA are equal on every replica; the moving statistics are averaged for
  // the checkpoint, and each replica's own values kept beside them.
  const std::vector<float> own = average_moving_statistics(*state_, reducer_);
  std::vector<std::vector<float>> replica_stats;
  if (!own.empty()) replica_stats = gather_to_leader(reducer_.comm(), own);
  last_saved_step_ = state_->global_step;
  last_save_time_ = Clock::now();
  // Each replica's input position (each reads its own shard of the files); none for fake data,
  // on every replica alike.
  std::map<std::string, std::string> metadata;
  if (std::optional<std::string> mine = input_position_text(*train_source_)) {
    const std::vector<std::string> all = gather_to_leader(reducer_.comm(), *mine);
    for (size_t r = 0; r < all.size(); ++r)
      metadata[input_position_key(static_cast<int>(r))] = all[r];
  }
  Status saved;
  if (leader_) {
    metadata.merge(checkpoint_metadata(meta_));
    metadata[kRunIdKey] = run_id_;
    std::vector<TensorView> tensors = state_->checkpoint_tensors();
    for (size_t r = 0; r < replica_stats.size(); ++r) {
      tensors.push_back(TensorView{kReplicaStatsPrefix + std::to_string(r), DType::f32,
                                   Shape{static_cast<int64_t>(replica_stats[r].size())},
                                   replica_stats[r].data()});
    }
    log_ << "Saving checkpoints for " << state_->global_step << " into " << options_.model_dir
         << "/model.ckpt." << std::endl;
    saved = save_checkpoint(options_.model_dir, state_->global_step, metadata, tensors,
                            options_.keep_checkpoint_max, options_.checkpoint_format);
  }
  restore_moving_statistics(*state_, own);
  return saved;
}

Status Session::write_train_summaries(float loss, double steps_per_sec, double examples_per_sec) {
  const int64_t step = state_->global_step;
  if (options_.save_summary_steps <= 0 || !train_events_) return Status();
  if (last_summary_step_ >= 0 && step - last_summary_step_ < options_.save_summary_steps) {
    return Status();
  }
  last_summary_step_ = step;
  IC_RETURN_IF_ERROR(
      train_events_->add_scalars({{"loss", loss},
                                  {"learning_rate", trainer_->last_learning_rate()},
                                  {"current_epoch", current_epoch(recipe_.schedule, step)},
                                  {"global_step/sec", steps_per_sec},
                                  {"examples/sec", examples_per_sec}},
                                 step));
  return train_events_->flush();
}

// A GPU runs the loop's work asynchronously: a kernel that faulted is reported by the backend's
// status(), checked once per loop (the loop has no host synchronisation), before its loss is
// read or a checkpoint of its weights is written.
Status Session::check_device(const char* during) {
  const Status device = backend_.status();
  if (device.ok()) return device;
  return error(backend_.description(), " failed during ", during, " (global step ",
               state_->global_step,
               "; no checkpoint written for it, the last one is kept): ", device.message());
}

Status Session::train_until(int64_t target) {
  while (state_->global_step < target && !stop_agreed()) {
    const int64_t steps = std::min<int64_t>(options_.iterations, target - state_->global_step);
    const Clock::time_point loop_start = Clock::now();
    int64_t done = 0;
    for (; done < steps; ++done) {
      IC_ASSIGN_OR_RETURN(std::shared_ptr<const Batch> batch, train_source_->next());
      if (!batch) return error("the training input ended (it should repeat)");
      trainer_->step(batch->images.data(), batch->labels.data(), /*want_loss=*/done + 1 == steps);
      if (stop_agreed()) break;
    }
    IC_RETURN_IF_ERROR(check_device("training"));
    if (done < steps) break;  // stopped mid-loop: no loss of the last step to report
    const float loss = trainer_->loss();
    if (!std::isfinite(loss)) {
      return error("NaN loss during training at global step ", state_->global_step,
                   " (no checkpoint written for it; the last one is kept)");
    }
    const double elapsed = seconds_since(loop_start);
    const double steps_per_sec = static_cast<double>(steps) / elapsed;
    const double examples_per_sec = steps_per_sec * options_.train_batch_size;
    // Counted where the reader and workers are, which runs a few batches ahead of the steps.
    const InputPipeline::Stats input_now = input_stats(*train_source_);
    const BadInputCount bad = bad_inputs_between(input_counted_, input_now);
    input_counted_ = input_now;
    log_ << "step = " << state_->global_step << ", loss = " << loss << " (" << fixed3(elapsed)
         << " sec)";
    if (bad.bad > 0) log_ << ", skipped " << bad.bad << " bad of " << bad.inputs << " inputs";
    log_ << "\n"
         << "global_step/sec: " << steps_per_sec << "\n"
         << "examples/sec: " << examples_per_sec << "\n";
    if (reducer_.size() > 1) {  // the gradients' all-reduce, per step of this loop
      const double reducing = reducer_.all_reduce_seconds() - all_reduce_seconds_logged_;
      all_reduce_seconds_logged_ = reducer_.all_reduce_seconds();
      log_ << "all-reduce ms/step: " << 1000 * reducing / static_cast<double>(steps) << "\n";
    }
    log_ << progress_line(state_->global_step, options_.train_steps, steps_per_sec) << std::endl;
    if (bad.inputs > 0 &&
        static_cast<double>(bad.bad) > options_.max_bad_input_fraction * bad.inputs) {
      return error("the input is too damaged: ", bad.bad, " of ", bad.inputs,
                   " records of the last training loop were corrupt or their images "
                   "undecodable, more than --max_bad_input_fraction=",
                   options_.max_bad_input_fraction, "\n", input_summary(*train_source_));
    }
    IC_RETURN_IF_ERROR(write_train_summaries(loss, steps_per_sec, examples_per_sec));
    // The leader's clock decides, so that every replica saves (and averages) together.
    const bool save_due = leader_ && options_.save_checkpoints_secs > 0 &&
                          seconds_since(last_save_time_) >= options_.save_checkpoints_secs;
    if (reducer_.any(save_due) && state_->global_step < target) IC_RETURN_IF_ERROR(save());
  }
  // After a stop signal stdout does not block (core/stop_signal.h): a write that found it full
  // left the stream failed, and the last lines get another try.
  if (stopped_) log_.clear();
  if (state_->global_step != last_saved_step_) IC_RETURN_IF_ERROR(save());
  if (stopped_) {
    log_ << "Stop requested" << (stop_signal_number() ? " by signal " : "")
         << (stop_signal_number() ? std::to_string(stop_signal_number()) : std::string())
         << ": checkpoint for step " << state_->global_step << " is saved; exiting." << std::endl;
  }
  return Status();
}

// An evaluation during training uses the replicas' mean moving statistics; training then goes
// on from each replica's own.
Result<std::string> Session::evaluate_and_report_averaged() {
  const std::vector<float> own = average_moving_statistics(*state_, reducer_);
  Result<std::string> results = evaluate_and_report();
  restore_moving_statistics(*state_, own);
  return results;
}

Result<std::string> Session::evaluate_and_report() {
  if (!evaluator_) IC_RETURN_IF_ERROR(prepare_evaluator());
  IC_ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> source,
                      make_batch_source(options_, false, evaluator_->batch_size(), reducer_.rank(),
                                        reducer_.size()));
  evaluator_->begin();
  // "Evaluation [k/n]" about ten times a pass, as TensorFlow's evaluation logs its progress.
  const std::optional<int64_t> batches = eval_batch_count(options_);
  const int64_t report_every = batches ? std::max<int64_t>(1, *batches / 10) : 10;
  int64_t done = 0;
  while (!stop_now()) {
    IC_ASSIGN_OR_RETURN(std::shared_ptr<const Batch> batch, source->next());
    if (!batch) break;
    evaluator_->run_batch(batch->images.data(), batch->labels.data());
    if (++done % report_every == 0 || (batches && done == *batches)) {
      log_ << "Evaluation [" << done;
      if (batches) log_ << "/" << *batches;
      log_ << "]" << std::endl;
    }
  }
  IC_RETURN_IF_ERROR(check_device("evaluation"));
  const std::string source_note = eval_input_summary(options_, *source);
  if (!source_note.empty()) log_ << source_note << std::endl;
  if (stop_agreed()) return std::string();
  const TopKCounts c = sum_over_replicas(evaluator_->counts(), reducer_.comm());
  if (c.count == 0) {  // on every replica: the sum is shared
    return error("evaluation found no image to score in the validation-* files of ",
                 options_.data_dir,
                 " (every file empty, not a TFRecord file, or every image undecodable); a score "
                 "over zero images would be meaningless");
  }
  const bool damaged = reducer_.any(eval_input_damaged(*source));  // every replica agrees
  IC_RETURN_IF_ERROR(check_eval_input_whole(options_, *source, damaged));
  if (!leader_) return std::string();
  const int64_t step = state_->global_step;
  last_scores_ = EvaluationOutcome{"", step, c.accuracy(), c.accuracy_at_5(), c.mean_loss()};
  const std::string results =
      format_eval_results(c.accuracy(), c.accuracy_at_5(), step, c.mean_loss());
  log_ << "Saving dict for global step " << step << ": " << results << std::endl;
  if (!eval_events_) {
    IC_ASSIGN_OR_RETURN(eval_events_, EventWriter::create(options_.model_dir + "/eval"));
  }
  IC_RETURN_IF_ERROR(eval_events_->add_scalars(
      {{"accuracy", c.accuracy()}, {"accuracy@5", c.accuracy_at_5()}, {"loss", c.mean_loss()}},
      step));
  IC_RETURN_IF_ERROR(eval_events_->flush());
  return "{" + results + "}";
}

Status Session::run_train() {
  IC_RETURN_IF_ERROR(prepare_training());
  const int64_t last = last_step_of_this_run(options_);
  if (state_->global_step >= last) {
    log_ << "Skipping training since max_steps has already saved." << std::endl;
    return Status();
  }
  IC_RETURN_IF_ERROR(train_until(last));
  if (!stopped_) log_ << "Loss for final step: " << trainer_->loss() << "." << std::endl;
  const std::string input_note = input_summary(*train_source_);
  if (!input_note.empty()) log_ << input_note << std::endl;
  return Status();
}

Status Session::run_train_and_eval() {
  IC_RETURN_IF_ERROR(prepare_training());
  const int64_t per_eval = options_.train_steps_per_eval;
  const int64_t last = last_step_of_this_run(options_);
  if (state_->global_step >= last) {
    log_ << "Skipping training since max_steps has already saved." << std::endl;
  }
  while (state_->global_step < last && !stopped_) {
    const int64_t cycle = state_->global_step / per_eval;
    const int64_t target = std::min<int64_t>(last, (cycle + 1) * per_eval);
    log_ << "Starting training cycle " << cycle << "." << std::endl;
    IC_RETURN_IF_ERROR(train_until(target));
    if (stopped_) break;
    log_ << "Starting evaluation cycle " << cycle << " ." << std::endl;
    IC_ASSIGN_OR_RETURN(std::string results, evaluate_and_report_averaged());
    if (stopped_) break;
    log_ << "Evaluation results: " << results << std::endl;
    if (leader_ && on_evaluation_) {
      // The checkpoint train_until() saved at this step is the model_dir's newest.
      IC_ASSIGN_OR_RETURN(std::optional<std::string> saved, latest_checkpoint(options_.model_dir));
      if (!saved)
        return error("no checkpoint in ", options_.model_dir, " after step ", state_->global_step,
                     " was saved");
      IC_RETURN_IF_ERROR(report_evaluation(*saved));
    }
  }
  return Status();
}

Status Session::report_evaluation(const std::string& checkpoint) {
  if (!on_evaluation_ || !last_scores_) return Status();
  EvaluationOutcome outcome = *last_scores_;
  outcome.checkpoint = checkpoint;
  last_scores_.reset();
  return on_evaluation_(outcome);
}

Status Session::run_eval() {
  IC_RETURN_IF_ERROR(prepare_evaluator());
  std::string last_path, last_error;
  Clock::time_point wait_start = Clock::now();
  bool announced = false;
  while (!stop_now()) {
    Result<std::optional<std::string>> latest = latest_checkpoint(options_.model_dir);
    if (latest.ok() && latest->has_value() && **latest != last_path) {
      const std::string path = **latest;
      last_path = path;
      log_ << "Found new checkpoint at " << path << "\nStarting to evaluate." << std::endl;
      const Clock::time_point start = Clock::now();
      // The trainer may prune it at any moment, even while it is read (a bundle's index goes
      // first): then it is skipped as the reference's NotFoundError is, not an error.
      Result<CheckpointContents> read = read_checkpoint(path);
      if (!read.ok() && read.status().code() == StatusCode::not_found) {
        log_ << "Checkpoint " << path << " no longer exists, skipping checkpoint" << std::endl;
        continue;
      }
      IC_ASSIGN_OR_RETURN(CheckpointContents file, std::move(read));
      IC_ASSIGN_OR_RETURN(CheckpointMeta saved, checked_checkpoint_meta(file, path));
      IC_RETURN_IF_ERROR(check_compatible(saved, meta_, path));
      IC_RETURN_IF_ERROR(state_->restore_for_eval(file, options_.moving_average, path));
      IC_ASSIGN_OR_RETURN(std::string results, evaluate_and_report());
      if (stopped_) break;
      log_ << "Eval results: " << results
           << ". Elapsed seconds: " << static_cast<int64_t>(seconds_since(start)) << std::endl;
      IC_RETURN_IF_ERROR(report_evaluation(path));
      const int64_t step = checkpoint_step(path).value_or(state_->global_step);
      if (step >= options_.train_steps) {
        log_ << "Evaluation finished after training step " << step << std::endl;
        return Status();
      }
      wait_start = Clock::now();
      announced = false;
      continue;
    }
    // The text, not the code: a different problem is worth a line of its own.
    if (!latest.ok() && latest.status().message() != last_error) {
      last_error = latest.status().message();  // say it once, keep polling: it may be fixed
      log_ << last_error << std::endl;
    }
    if (!announced) {
      log_ << "Waiting for new checkpoint at " << options_.model_dir << std::endl;
      announced = true;
    }
    if (options_.eval_timeout >= 0 && seconds_since(wait_start) >= options_.eval_timeout) {
      log_ << options_.eval_timeout
           << " seconds without new checkpoints have elapsed ... terminating eval" << std::endl;
      return Status();
    }
    for (int i = 0; i < 10 && !stop_requested(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polls once a second
    }
  }
  log_ << "Stop requested: evaluation ends." << std::endl;
  return Status();
}

}  // namespace

TopKCounts sum_over_replicas(const TopKCounts& counts, Communicator& comm) {
  if (comm.size() == 1) return counts;
  double values[] = {static_cast<double>(counts.top1), static_cast<double>(counts.top5),
                     static_cast<double>(counts.count), counts.loss_sum,
                     static_cast<double>(counts.loss_batches)};
  comm.all_reduce_sum(values, std::size(values));  // counts below 2^53 stay exact
  TopKCounts sum;
  sum.top1 = static_cast<int64_t>(values[0]);
  sum.top5 = static_cast<int64_t>(values[1]);
  sum.count = static_cast<int64_t>(values[2]);
  sum.loss_sum = values[3];
  sum.loss_batches = static_cast<int64_t>(values[4]);
  return sum;
}

std::string format_eval_results(double accuracy, double accuracy_at_5, int64_t step, double loss) {
  std::ostringstream out;
  out << "accuracy = " << accuracy << ", accuracy@5 = " << accuracy_at_5
      << ", global_step = " << step << ", loss = " << loss;
  return out.str();
}

Status run_mode(const RunOptions& options, Backend& backend, std::ostream& log,
                Communicator* communicator, const EvaluationListener& on_evaluation) {
  std::unique_ptr<Communicator> single;
  if (communicator == nullptr) {
    single = make_single_process_communicator();
    communicator = single.get();
  }
  Session session(options, backend, log, *communicator, on_evaluation);
  return session.run();
}

}  // namespace ic
