// The run loop's inputs: the threaded TFRecord input pipeline (--use_data=real) or random
// tensors (--use_data=fake), both behind data/input_pipeline.h's BatchSource.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "data/input_pipeline.h"
#include "train/run_options.h"

namespace ic {

// training: shuffled, repeated, augmented; otherwise one pass over the validation split in
// order with the last batch padded (label -1). `batch_size` is this process's share of the
// global batch. With --eval_total_size=N > 0 evaluation stops after N / eval_batch_size
// batches (the reference's eval_steps); with 0 it covers every validation image once.
//
// Data parallel (replica r of n): training reads files r, r+n, ... of the sorted train-* files
// with its own shuffle and augmentation seed; evaluation splits the validation-* files the same
// way, so the replicas together see every validation image once (when there are fewer files than
// replicas, replica 0 reads them all and the others none). Fake data is the same on every replica.
//
// Training may resume at `resume` (an input_position_text() saved in a checkpoint; `where` names
// that checkpoint for errors): the TFRecord stream continues exactly where it stood. A position
// of another stream (other files, seed, batch size, interleave or shuffle buffer) gives a fresh
// stream and a notice in *notice; a damaged one, or offsets that no longer fit the files, is an
// error. Fake data needs no position: every batch is the same one.
Result<std::unique_ptr<BatchSource>> make_batch_source(const RunOptions& options, bool training,
                                                       int64_t batch_size, int replica = 0,
                                                       int replicas = 1,
                                                       const std::string* resume = nullptr,
                                                       const std::string& where = "",
                                                       std::string* notice = nullptr);

// The training stream's position after the batches handed out so far, as saved text
// (data/input_position.h); nullopt for fake data.
std::optional<std::string> input_position_text(const BatchSource& source);

// How many batches one evaluation pass has, when that is known before reading: fake data, or
// --eval_total_size > 0 (eval_total_size / eval_batch_size, the reference's eval_steps);
// nullopt when the pass covers the whole validation split (its size is known only at its end).
std::optional<int64_t> eval_batch_count(const RunOptions& options);

// A line for the log after a pass ("skipped 2 undecodable images: ..."), with each damaged
// record's file, byte offset and bytes skipped; empty when there is nothing to say.
std::string input_summary(const BatchSource& source);

// After an evaluation pass (which reads past damaged records, so that all of them are named):
// whether this replica's pass lost records to damage, and, when any replica's did
// (`any_damaged`) and --eval_skip_corrupt is false, the error that refuses the score, naming
// each damaged place by file and byte offset.
bool eval_input_damaged(const BatchSource& source);
Status check_eval_input_whole(const RunOptions& options, const BatchSource& source,
                              bool any_damaged);

// After an evaluation pass over real data: "evaluated N of the M records the validation files
// hold" (M counted by following the files' framing; damaged stretches whose records could not
// be counted are named by their bytes), then input_summary's lines. Empty for fake data.
std::string eval_input_summary(const RunOptions& options, const BatchSource& source);

// The input pipeline's counts so far; all zero for fake data.
InputPipeline::Stats input_stats(const BatchSource& source);

// Bad inputs (corrupt records + undecodable images) between two readings of input_stats.
struct BadInputCount {
  int64_t bad = 0, inputs = 0;
};
BadInputCount bad_inputs_between(const InputPipeline::Stats& before,
                                 const InputPipeline::Stats& after);

}  // namespace ic
