// SIGINT / SIGTERM during a run: the handler only sets a flag; the run loop checks it between
// steps, writes a checkpoint and returns normally (exit code 0). A second signal while the
// checkpoint is written is absorbed too: checkpoint writes are atomic anyway (io/checkpoint_dir.h),
// so even SIGKILL never leaves a half-written checkpoint.
#pragma once

namespace ic {

void install_stop_signal_handlers();
bool stop_requested();
void request_stop();  // what the handler does; also for tests
void clear_stop_request();
int stop_signal_number();  // the signal that asked (0 when none or requested directly)

}  // namespace ic
