// Reading YAML nodes into typed config fields, for every YAML file the
// project reads (inference.yaml, gateway.yaml, rollout specs, golden sets):
// every problem becomes a Status "file:line: path: what is wrong (what is
// allowed)".
#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace brisk {
struct ApiKeyConfig;
}

namespace brisk::config_yaml {

std::string_view Trim(std::string_view s);
// Whole string is a decimal integer (optional sign).
bool ParseInt64(std::string_view s, int64_t* out);
// Whole string is a finite decimal number ("10", "2.5", "1e-3").
bool ParseFiniteDouble(std::string_view s, double* out);
// How a node looks, for "got ..." in messages.
std::string Describe(const YAML::Node& n);
// 1-based line of `n`, or `fallback` when the node has no position.
int LineOf(const YAML::Node& n, int fallback);

// Where a value sits: its dotted path for messages and the 1-based line of
// its key (a null value's own mark points at the next line).
struct Loc {
  std::string path;
  int line;
};

using Handler = std::function<Status(const YAML::Node& value, const Loc& at)>;

struct Field {
  std::string_view name;
  Handler read;
};

struct Section {
  std::string_view name;
  std::vector<Field> fields;
};

// Reads YAML nodes into typed fields. Remembers the line of each key set, for
// checks that involve two keys. The handlers it returns capture `this`: the
// Reader must outlive them.
class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  template <typename... Args>
  Status Error(int line, fmt::format_string<Args...> f, Args&&... args) const {
    return InvalidArgument("{}:{}: {}", file_, line, fmt::format(f, std::forward<Args>(args)...));
  }

  // Reads a map whose keys must be `fields`; null means "all defaults".
  // `path` is "" for the top level. `others` lets an unknown key point at the
  // section it belongs in.
  Status ReadMap(const YAML::Node& map, const Loc& at, const std::vector<Field>& fields,
                 const std::vector<Section>& others);
  // One top-level field per section, reading its map with ReadMap; `sections`
  // must outlive the fields.
  std::vector<Field> SectionFields(const std::vector<Section>& sections);

  // Line of a key that was set, or 0.
  int LineOfKey(std::string_view path) const;

  // --- Field readers. ---

  Handler Bool(bool* dst) const;

  template <typename T>
  Handler Int(T* dst, int64_t min, int64_t max) const {
    return [this, dst, min, max](const YAML::Node& v, const Loc& at) -> Status {
      int64_t x = 0;
      RETURN_IF_ERROR(ReadInt(v, at, min, max, &x));
      *dst = static_cast<T>(x);
      return Status::Ok();
    };
  }

  Handler PowerOfTwo(int* dst, int max) const;
  // Seconds; `positive` excludes 0.
  Handler Seconds(double* dst, bool positive, double max) const;
  // A finite number in [min, max].
  Handler Number(double* dst, double min, double max) const;
  Handler Bytes(int64_t* dst, int64_t max) const;
  // Null reads as "".
  Handler String(std::string* dst, bool allow_empty) const;
  Handler OneOf(std::string* dst, std::span<const std::string_view> allowed) const;

 private:
  Status ReadInt(const YAML::Node& v, const Loc& at, int64_t min, int64_t max, int64_t* x) const;
  Status UnknownKey(int line, const std::string& name, const std::string& path,
                    const std::string& where, const std::vector<Field>& fields,
                    const std::vector<Section>& others) const;

  std::string file_;
  std::map<std::string, int> lines_;
};

// Parses `yaml_text` as one YAML document and runs `parse` on it (a Null node
// for an empty document or only comments). yaml-cpp's exceptions become
// kInvalidArgument "file:line: YAML syntax error ..." here, the one place that
// catches them; a second document is an error.
Status WithYamlDocument(std::string_view yaml_text, std::string_view filename,
                        const std::function<Status(const YAML::Node& doc)>& parse);

// The text of a config file. A missing file is kNotFound, an unreadable one
// (permissions, a directory, over 16 MiB) kInvalidArgument; both name the path.
Expected<std::string> ReadConfigFile(const std::string& path);

// keys: [{key|key_env, tenant, feature, name}, ...] (inference.yaml's and
// gateway.yaml's API keys; defined in config.cc).
Status ReadApiKeys(const Reader& r, const YAML::Node& n, const Loc& at,
                   std::vector<ApiKeyConfig>* out);

}  // namespace brisk::config_yaml
