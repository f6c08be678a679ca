// SIGINT / SIGTERM during a run. The first signal only sets a flag: the run loop checks it
// between steps, writes a checkpoint and returns normally (exit code 0). The process must not
// be unstoppable, though: a second signal, or the first when no step boundary acknowledges it
// within the timeout (a step that never ends, an input that never yields), exits at once with
// a message and exit code 128 + signal. The last checkpoint is intact anyway: checkpoint writes
// are atomic (io/checkpoint_dir.h), so even SIGKILL never leaves a half-written one.
// From the first signal on, stdout and stderr do not block (their flags come back at exit): a
// launcher that stops reading them (mpirun, once signalled) must not keep the run from its
// checkpoint; output that finds them full is dropped.
#pragma once

namespace ic {

// `program` names the process in the forced-exit message (copied); timeout_secs = 0 disables
// the timeout.
void install_stop_signal_handlers(const char* program = "", int timeout_secs = 60);
bool stop_requested();
// The run loop has seen the request and is stopping (at a step boundary): the timeout no
// longer applies; a second signal still exits at once.
void acknowledge_stop();
void request_stop();  // what the handler does; also for tests
void clear_stop_request();
int stop_signal_number();  // the signal that asked (0 when none or requested directly)

}  // namespace ic
