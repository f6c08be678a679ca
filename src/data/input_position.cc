#include "data/input_position.h"

#include <sstream>

namespace ic {
namespace {

constexpr char kHeader[] = "inception_cpp input position 1";
// Bounds on counts read from outside bytes, far above any real stream (a shuffle buffer of
// 10 million records, a million files), so that a damaged count is refused before it allocates.
constexpr uint64_t kMaxFiles = 1u << 20;
constexpr uint64_t kMaxBuffered = 10'000'000;

// Reads "<word> <value>" pairs and bare values from one line at a time, remembering the first
// problem so that the parser reads straight through and reports it once.
class LineReader {
 public:
  LineReader(const std::string& text, const std::string& where) : in_(text), where_(where) {}

  bool next_line(const char* what) {
    if (!failure_.ok()) return false;
    if (!std::getline(in_, line_)) return fail("ends before ", what);
    fields_.clear();
    fields_.str(line_);
    what_ = what;
    return true;
  }
  const std::string& line() const { return line_; }
  template <typename T>
  bool value(T* out) {
    if (!failure_.ok()) return false;
    if (!(fields_ >> *out)) return fail("malformed ", what_, " line '", line_, "'");
    return true;
  }
  template <typename T>
  bool keyed(const char* key, T* out) {
    std::string word;
    if (!failure_.ok()) return false;
    if (!(fields_ >> word) || word != key) {
      return fail("expected '", key, "' in the ", what_, " line '", line_, "'");
    }
    return value(out);
  }
  template <typename... Parts>
  bool fail(const Parts&... parts) {
    if (failure_.ok()) failure_ = error(where_, ": input position: ", parts...);
    return false;
  }
  const Status& failure() const { return failure_; }

 private:
  std::istringstream in_;
  std::istringstream fields_;
  std::string line_;
  const char* what_ = "";
  std::string where_;
  Status failure_;
};

}  // namespace

std::string format_input_position(const InputPosition& p) {
  std::ostringstream out;
  out << kHeader << "\n"
      << "seed " << p.seed << " cycle_length " << p.cycle_length << " shuffle_buffer "
      << p.shuffle_buffer << " batch_size " << p.batch_size << "\n"
      << "files " << p.file_names.size() << "\n";
  for (const std::string& name : p.file_names) out << name << "\n";
  const RecordStreamPosition& s = p.stream;
  out << "stream_index " << p.stream_index << "\n"
      << "epoch " << s.epoch << " order_pos " << s.order_pos << " input_done "
      << (s.input_done ? 1 : 0) << "\n"
      << "rng " << s.shuffle_rng[0] << " " << s.shuffle_rng[1] << " " << s.shuffle_rng[2] << " "
      << s.shuffle_rng[3] << "\n"
      << "open " << s.open_files.size() << " slot_pos " << s.slot_pos << "\n";
  for (const auto& f : s.open_files) {
    out << f.file << " " << f.offset << " " << f.good_records << "\n";
  }
  out << "buffer " << s.buffer.size() << "\n";
  for (const auto& b : s.buffer) out << b.file << " " << b.offset << "\n";
  return out.str();
}

Result<InputPosition> parse_input_position(const std::string& text, const std::string& where) {
  LineReader r(text, where);
  InputPosition p;
  RecordStreamPosition& s = p.stream;
  if (r.next_line("the header") && r.line() != kHeader) {
    r.fail("not an input position (first line '", r.line(), "', expected '", kHeader, "')");
  }
  if (r.next_line("the stream line")) {
    r.keyed("seed", &p.seed) && r.keyed("cycle_length", &p.cycle_length) &&
        r.keyed("shuffle_buffer", &p.shuffle_buffer) && r.keyed("batch_size", &p.batch_size);
  }
  uint64_t files = 0;
  if (r.next_line("the files line") && r.keyed("files", &files) && files > kMaxFiles) {
    r.fail("claims ", files, " files");
  }
  for (uint64_t i = 0; i < files && r.next_line("a file name"); ++i) {
    if (r.line().empty() || r.line().find('/') != std::string::npos) {
      r.fail("bad file name '", r.line(), "'");
    }
    p.file_names.push_back(r.line());
  }
  if (r.next_line("the stream_index line")) r.keyed("stream_index", &p.stream_index);
  int input_done = 0;
  if (r.next_line("the epoch line")) {
    r.keyed("epoch", &s.epoch) && r.keyed("order_pos", &s.order_pos) &&
        r.keyed("input_done", &input_done);
  }
  if (r.failure().ok() && input_done != 0 && input_done != 1) {
    r.fail("input_done is ", input_done, ", not 0 or 1");
  }
  s.input_done = input_done == 1;
  if (r.next_line("the rng line")) {
    r.keyed("rng", &s.shuffle_rng[0]) && r.value(&s.shuffle_rng[1]) && r.value(&s.shuffle_rng[2]) &&
        r.value(&s.shuffle_rng[3]);
  }
  uint64_t open = 0;
  if (r.next_line("the open line") && r.keyed("open", &open) && r.keyed("slot_pos", &s.slot_pos) &&
      open > kMaxFiles) {
    r.fail("claims ", open, " open files");
  }
  for (uint64_t i = 0; i < open && r.next_line("an open file"); ++i) {
    RecordStreamPosition::OpenFile f;
    r.value(&f.file) && r.value(&f.offset) && r.value(&f.good_records);
    s.open_files.push_back(f);
  }
  uint64_t buffered = 0;
  if (r.next_line("the buffer line") && r.keyed("buffer", &buffered) && buffered > kMaxBuffered) {
    r.fail("claims ", buffered, " buffered records");
  }
  for (uint64_t i = 0; i < buffered && r.next_line("a buffered record"); ++i) {
    RecordStreamPosition::BufferedRecord b;
    r.value(&b.file) && r.value(&b.offset);
    s.buffer.push_back(b);
  }
  if (!r.failure().ok()) return r.failure();
  // Internal consistency: every index must name a listed file.
  const auto bad_index = [&](uint64_t file) { return file >= p.file_names.size(); };
  for (const auto& f : s.open_files) {
    if (bad_index(f.file))
      return error(where, ": input position: open file ", f.file, " of ", files);
  }
  for (const auto& b : s.buffer) {
    if (bad_index(b.file))
      return error(where, ": input position: buffered file ", b.file, " of ", files);
  }
  if (p.cycle_length < 1 || p.shuffle_buffer < 0 || p.batch_size < 1 || s.epoch < 0 ||
      s.order_pos > files || s.slot_pos > open || open > static_cast<uint64_t>(p.cycle_length) ||
      buffered > static_cast<uint64_t>(p.shuffle_buffer)) {
    return error(where, ": input position: inconsistent counts (cycle_length ", p.cycle_length,
                 ", shuffle_buffer ", p.shuffle_buffer, ", batch_size ", p.batch_size, ", epoch ",
                 s.epoch, ", order_pos ", s.order_pos, " of ", files, " files, slot_pos ",
                 s.slot_pos, " of ", open, " open, ", buffered, " buffered)");
  }
  if (s.shuffle_rng == Rng::StateWords{}) {
    return error(where, ": input position: an all-zero generator state");
  }
  return p;
}

}  // namespace ic
