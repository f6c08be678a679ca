#include "train/sweep_hparams.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "io/event_writer.h"
#include "io/file_system.h"
#include "proto/hparams.pb.h"

namespace ic {
namespace {

namespace hp = tensorboard::hparams;

constexpr const char* kPlugin = "hparams";
constexpr const char* kExperimentTag = "_hparams_/experiment";
constexpr const char* kSessionStartTag = "_hparams_/session_start_info";
constexpr const char* kSessionEndTag = "_hparams_/session_end_info";
// Where the trainers' evaluations are, relative to a variant's directory (the session).
constexpr const char* kEvalGroup = "model/eval";

// A flag's value as the dashboard shows and sorts it: a number, a boolean or text.
google::protobuf::Value hparam_value(const std::string& text) {
  google::protobuf::Value v;
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (text == "true" || text == "false") {
    v.set_bool_value(text == "true");
  } else if (!text.empty() && end == text.c_str() + text.size()) {
    v.set_number_value(number);
  } else {
    v.set_string_value(text);
  }
  return v;
}

hp::DataType data_type(const google::protobuf::Value& v) {
  switch (v.kind_case()) {
    case google::protobuf::Value::kBoolValue: return hp::DATA_TYPE_BOOL;
    case google::protobuf::Value::kNumberValue: return hp::DATA_TYPE_FLOAT64;
    default: return hp::DATA_TYPE_STRING;
  }
}

// `text` as a value of `type` (text when the flag's values are of mixed kinds).
google::protobuf::Value typed_value(const std::string& text, hp::DataType type) {
  if (type != hp::DATA_TYPE_STRING) return hparam_value(text);
  google::protobuf::Value v;
  v.set_string_value(text);
  return v;
}

// A flag some variant sets: its distinct values, in the order first seen, and their kind.
struct HParam {
  std::string name;
  std::vector<std::string> values;
  hp::DataType type = hp::DATA_TYPE_STRING;
};

std::vector<HParam> sweep_hparams(const SweepConfig& config) {
  std::vector<HParam> hparams;
  for (const SweepVariant& v : config.variants) {
    for (const auto& [name, value] : v.flags) {
      auto it = std::find_if(hparams.begin(), hparams.end(),
                             [&](const HParam& h) { return h.name == name; });
      if (it == hparams.end()) {
        hparams.push_back(HParam{name, {}, data_type(hparam_value(value))});
        it = hparams.end() - 1;
      }
      if (std::find(it->values.begin(), it->values.end(), value) == it->values.end())
        it->values.push_back(value);
      if (data_type(hparam_value(value)) != it->type) it->type = hp::DATA_TYPE_STRING;
    }
  }
  return hparams;
}

// True when `dir` holds an event file of its own (not in a subdirectory).
bool has_event_file(const std::string& dir) {
  Result<std::vector<std::string>> events = list_files(dir, "events.out.tfevents.");
  return events.ok() && !events->empty();
}

Status write_plugin_data(const std::string& dir, const char* tag, const hp::HParamsPluginData& d) {
  IC_ASSIGN_OR_RETURN(std::unique_ptr<EventWriter> writer, EventWriter::create(dir));
  IC_RETURN_IF_ERROR(writer->add_plugin_summary(tag, kPlugin, d.SerializeAsString(), 0));
  return writer->close();
}

}  // namespace

Status write_hparams_experiment(const SweepConfig& config, const std::string& sweep_dir) {
  if (has_event_file(sweep_dir)) return Status();
  hp::HParamsPluginData data;
  hp::Experiment* experiment = data.mutable_experiment();
  experiment->set_name(base_name(sweep_dir));
  experiment->set_description("sweep of " + config.trainer);
  experiment->set_time_created_secs(event_wall_time());
  for (const HParam& hparam : sweep_hparams(config)) {
    hp::HParamInfo* info = experiment->add_hparam_infos();
    info->set_name(hparam.name);
    info->set_description("--" + hparam.name);
    info->set_type(hparam.type);
    for (const std::string& value : hparam.values)
      *info->mutable_domain_discrete()->add_values() = typed_value(value, hparam.type);
  }
  for (const char* tag : {"accuracy", "accuracy@5", "loss"}) {
    hp::MetricInfo* metric = experiment->add_metric_infos();
    metric->mutable_name()->set_group(kEvalGroup);
    metric->mutable_name()->set_tag(tag);
    metric->set_display_name(std::string("eval ") + tag);
    metric->set_dataset_type(hp::DATASET_VALIDATION);
  }
  return write_plugin_data(sweep_dir, kExperimentTag, data);
}

Status write_hparams_session_start(const SweepConfig& config, const SweepVariant& variant,
                                   const std::string& sweep_dir) {
  const std::string dir = join_path(sweep_dir, variant.name);
  if (has_event_file(dir)) return Status();
  std::map<std::string, hp::DataType> types;
  for (const HParam& hparam : sweep_hparams(config)) types[hparam.name] = hparam.type;
  hp::HParamsPluginData data;
  hp::SessionStartInfo* start = data.mutable_session_start_info();
  for (const auto& [name, value] : variant.flags)
    (*start->mutable_hparams())[name] = typed_value(value, types[name]);
  start->set_model_uri(join_path(dir, "model"));
  start->set_group_name(variant.name);
  start->set_start_time_secs(event_wall_time());
  return write_plugin_data(dir, kSessionStartTag, data);
}

Status write_hparams_session_end(const SweepVariant& variant, const std::string& sweep_dir) {
  hp::HParamsPluginData data;
  data.mutable_session_end_info()->set_status(hp::STATUS_SUCCESS);
  data.mutable_session_end_info()->set_end_time_secs(event_wall_time());
  return write_plugin_data(join_path(sweep_dir, variant.name), kSessionEndTag, data);
}

}  // namespace ic
