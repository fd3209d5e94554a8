#include "cli/serving_gate.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace brisk {

using Json = nlohmann::json;

std::string ServingKey::Id() const {
  const std::string rope_part = rope == "file" ? "" : "-rope-" + rope;
  return fmt::format("{}-{}-kv{}{}-{}", model_hash, precision, kv_precision, rope_part,
                     engine_version);
}

Json ServingKey::ToJson() const {
  Json j = {{"id", Id()},
            {"model_hash", model_hash},
            {"precision", precision},
            {"kv_precision", kv_precision},
            {"engine_version", engine_version}};
  if (rope != "file") j["rope"] = rope;
  return j;
}

Expected<ServingKey> ServingKey::FromJson(const Json& j) {
  ServingKey k;
  for (auto [name, dst] : {std::pair{"model_hash", &k.model_hash},
                           {"precision", &k.precision},
                           {"kv_precision", &k.kv_precision},
                           {"engine_version", &k.engine_version}}) {
    if (!j.is_object() || !j.contains(name) || !j[name].is_string())
      return InvalidArgument("serving key: '{}' is missing or not a string", name);
    *dst = j[name].get<std::string>();
  }
  if (j.contains("rope")) {
    if (!j["rope"].is_string()) return InvalidArgument("serving key: 'rope' is not a string");
    k.rope = j["rope"].get<std::string>();
  }
  return k;
}

std::string ModelFileHash(std::span<const uint8_t> bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

Status CheckKeyDescribesLocalRun(const ServingKey& key, std::string_view file_hash) {
  if (key.model_hash != file_hash)
    return InvalidArgument("the model file's hash is {}; the server's serving key names {}",
                           file_hash, key.model_hash);
  if (key.engine_version != kEngineVersion)
    return InvalidArgument("the server runs engine version {}, this brisk {}", key.engine_version,
                           kEngineVersion);
  return Status::Ok();
}

std::string DefaultGateDir() {
  if (const char* d = std::getenv("BRISK_GATE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (std::filesystem::path(x) / "brisk" / "gates").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (std::filesystem::path(h) / ".cache" / "brisk" / "gates").string();
  return "brisk-gates";
}

Expected<std::string> FindPassingGateReport(const std::string& dir, const ServingKey& key) {
  const std::string path = (std::filesystem::path(dir) / (key.Id() + ".json")).string();
  std::ifstream in(path);
  if (!in) return NotFound("no gate report {}", path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Json j = Json::parse(text, nullptr, false);
  if (!j.is_object()) return NotFound("gate report {} is not JSON", path);
  auto stored = ServingKey::FromJson(j.value("serving_key", Json()));
  if (!stored.ok() || !(*stored == key))
    return NotFound("gate report {} is for another model, precision or engine version", path);
  if (j.value("gate_passed", false) != true) return NotFound("gate report {} did not pass", path);
  return path;
}

}  // namespace brisk
