#include "serve/metrics.h"

#include <sstream>

namespace ic {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out.precision(9);
  out << value;
  return out.str();
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::write(const std::string& name, std::string* out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    *out += name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  *out += name + "_sum " + number(sum_) + "\n";
  *out += name + "_count " + std::to_string(count_) + "\n";
}

namespace {

std::vector<double> batch_bounds(int64_t max_batch_size) {
  std::vector<double> bounds;
  for (int64_t size = 1; size < max_batch_size; size *= 2) bounds.push_back(double(size));
  bounds.push_back(double(max_batch_size));
  return bounds;
}

}  // namespace

ServerMetrics::ServerMetrics(int64_t max_batch_size)
    : latency_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}),
      batch_size_(batch_bounds(max_batch_size)),
      batch_seconds_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}) {}

void ServerMetrics::record_request(const std::string& endpoint, int code, double seconds) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, code}];
  latency_.observe(seconds);
}

void ServerMetrics::record_batch(int64_t size, double seconds) {
  std::lock_guard lock(mutex_);
  batch_size_.observe(double(size));
  batch_seconds_.observe(seconds);
  images_ += static_cast<uint64_t>(size);
}

void ServerMetrics::record_stages(const Stages& stages) {
  std::lock_guard lock(mutex_);
  stage_sums_.receive += stages.receive;
  stage_sums_.parse += stages.parse;
  stage_sums_.preprocess += stages.preprocess;
  stage_sums_.queue += stages.queue;
  stage_sums_.model += stages.model;
  stage_sums_.respond += stages.respond;
  ++stage_count_;
}

void ServerMetrics::record_load(bool ok, int64_t version) {
  std::lock_guard lock(mutex_);
  if (ok) {
    ++loads_ok_;
    version_ = version;
  } else {
    ++loads_failed_;
  }
}

void ServerMetrics::record_precision(const std::string& model, const std::string& precision) {
  std::lock_guard lock(mutex_);
  model_ = model;
  precision_ = precision;
}

void ServerMetrics::record_model_request(const std::string& model, int code) {
  std::lock_guard lock(mutex_);
  ++model_requests_[{model, code}];
}

namespace {

// A label value as Prometheus' text format writes it: a config's model name may hold anything.
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string ServerMetrics::prometheus_text() const {
  std::lock_guard lock(mutex_);
  std::string out;
  out += "# HELP serve_requests_total HTTP requests answered, by endpoint and status code.\n";
  out += "# TYPE serve_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    out += "serve_requests_total{endpoint=\"" + key.first + "\",code=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  }
  out +=
      "# HELP serve_model_requests_total Predicts and classifies (REST and gRPC), by model "
      "and HTTP status code.\n";
  out += "# TYPE serve_model_requests_total counter\n";
  for (const auto& [key, count] : model_requests_) {
    out += "serve_model_requests_total{model=\"" + label_value(key.first) + "\",code=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  }
  out += "# HELP serve_stage_seconds Where REST predict and classify time went, by stage.\n";
  out += "# TYPE serve_stage_seconds summary\n";
  const std::pair<const char*, double> stages[] = {
      {"receive", stage_sums_.receive},       {"parse", stage_sums_.parse},
      {"preprocess", stage_sums_.preprocess}, {"queue", stage_sums_.queue},
      {"model", stage_sums_.model},           {"respond", stage_sums_.respond}};
  for (const auto& [stage, sum] : stages) {
    out += "serve_stage_seconds_sum{stage=\"" + std::string(stage) + "\"} " + std::to_string(sum) +
           "\n";
    out += "serve_stage_seconds_count{stage=\"" + std::string(stage) + "\"} " +
           std::to_string(stage_count_) + "\n";
  }
  out += "# HELP serve_request_duration_seconds Time from a request's arrival to its answer.\n";
  out += "# TYPE serve_request_duration_seconds histogram\n";
  latency_.write("serve_request_duration_seconds", &out);
  out += "# HELP serve_batch_size Instances per model run (before padding to the bucket).\n";
  out += "# TYPE serve_batch_size histogram\n";
  batch_size_.write("serve_batch_size", &out);
  out += "# HELP serve_batch_duration_seconds Time of one model run.\n";
  out += "# TYPE serve_batch_duration_seconds histogram\n";
  batch_seconds_.write("serve_batch_duration_seconds", &out);
  out +=
      "# HELP serve_images_total Images (instances) run through the model; rate() gives "
      "images per second.\n";
  out += "# TYPE serve_images_total counter\n";
  out += "serve_images_total " + std::to_string(images_) + "\n";
  out +=
      "# HELP serve_model_version The global step of the checkpoint (or the number of the export) "
      "being served (-1: none).\n";
  out += "# TYPE serve_model_version gauge\n";
  out += "serve_model_version " + std::to_string(version_) + "\n";
  out += "# HELP serve_model_loads_total Checkpoint loads, by result.\n";
  out += "# TYPE serve_model_loads_total counter\n";
  out += "serve_model_loads_total{result=\"ok\"} " + std::to_string(loads_ok_) + "\n";
  out += "serve_model_loads_total{result=\"failed\"} " + std::to_string(loads_failed_) + "\n";
  if (!precision_.empty()) {
    out +=
        "# HELP serve_model_precision The number format the served model computes in "
        "(--precision; auto resolved at load): 1 for the one in use.\n";
    out += "# TYPE serve_model_precision gauge\n";
    out += "serve_model_precision{model=\"" + model_ + "\",precision=\"" + precision_ + "\"} 1\n";
  }
  return out;
}

}  // namespace ic
