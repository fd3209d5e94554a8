// The golden-set gate on the serving path: a serving change (a
// weight precision other than the file's own, a KV precision other than
// F16, a RoPE scaling other than the file's) starts only with a passing gate report for exactly
// what is served: the model file's bytes, the precision, the KV precision and the engine version.
// `brisk eval golden --save-gate` writes such a report after a run against a server that reports
// its key in /v1/models: the golden set's answers and, when the set's gate file names KLD
// thresholds, the distribution check of that key's configuration against the file's native one,
// scored in the eval process from the same file (eval/kld_gate.h); `brisk serve` looks it up at
// startup.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "util/status.h"

namespace brisk {

// Bumped when the engine's numerics change, so old gate reports stop
// applying.
inline constexpr std::string_view kEngineVersion = "2026.12.1";

struct ServingKey {
  std::string model_hash;  // XXH3-128 of the GGUF file's bytes, hex
  std::string precision;   // model.precision
  std::string kv_precision = "f16";
  // model.rope_scaling as applied (RopeScalingKey: "yarn-x2-o8192"); "file" =
  // the file's own scaling, which the model hash already covers. Only a
  // profile's scaling shows in Id() and ToJson(), so older reports still apply.
  std::string rope = "file";
  std::string engine_version = std::string(kEngineVersion);

  // "<hash>-<precision>-kv<kv>[-rope-<rope>]-<version>": the report's file name.
  std::string Id() const;
  nlohmann::json ToJson() const;  // the fields and "id"
  static Expected<ServingKey> FromJson(const nlohmann::json& j);
  bool operator==(const ServingKey&) const = default;
};

std::string ModelFileHash(std::span<const uint8_t> bytes);

// Whether a local model file with hash `file_hash`, run by this binary, is
// what `key` describes: InvalidArgument naming the difference (another
// file, or a server of another engine version) otherwise.
Status CheckKeyDescribesLocalRun(const ServingKey& key, std::string_view file_hash);

// $BRISK_GATE_DIR, else $XDG_CACHE_HOME/brisk/gates, else
// $HOME/.cache/brisk/gates, else ./brisk-gates.
std::string DefaultGateDir();

// The path of a passing report for `key` in `dir`: <dir>/<key.Id()>.json
// that parses, names the same key and says gate_passed. NotFound (with what
// is missing) otherwise.
Expected<std::string> FindPassingGateReport(const std::string& dir, const ServingKey& key);

}  // namespace brisk
