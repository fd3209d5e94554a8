#include "server/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace brisk {

namespace {

constexpr std::string_view kPrecisions[] = {"native", "f32",  "f16",  "bf16", "q8_0",
                                            "q4_0",   "int8", "int4", "fp8"};

constexpr int64_t kMaxBytes = int64_t{1} << 62;
constexpr int64_t kMaxConfigFileBytes = int64_t{16} << 20;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whole string is a decimal integer (optional sign).
bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.starts_with('+')) s.remove_prefix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Whole string is a finite decimal number ("10", "2.5", "1e-3").
bool ParseFiniteDouble(std::string_view s, double* out) {
  if (s.starts_with('+')) s.remove_prefix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*out);
}

// Classic edit distance, for "did you mean".
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// How a node looks, for "got ..." in messages.
std::string Describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Scalar: return fmt::format("'{}'", n.Scalar());
    default: return "nothing";
  }
}

int LineOf(const YAML::Node& n, int fallback) {
  int line = n.Mark().line;
  return line >= 0 ? line + 1 : fallback;
}

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

// Reads YAML nodes into typed fields, turning every problem into a
// "file:line: path: message" Status. Remembers the line of each key set, for
// checks that involve two keys.
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
                 const std::vector<Section>& others) {
    std::string where =
        at.path.empty() ? std::string("the top level") : fmt::format("'{}'", at.path);
    if (map.IsNull()) return Status::Ok();
    if (!map.IsMap()) {
      return Error(at.line, "{}: expected a map with keys {}, got {}",
                   at.path.empty() ? "top level" : at.path, Names(fields), Describe(map));
    }
    std::map<std::string, int, std::less<>> seen;
    // Iterator values are proxies: copy the nodes (they are handles), never
    // keep references into `it->first`.
    for (const auto& entry : map) {
      const YAML::Node key = entry.first;
      const YAML::Node value = entry.second;
      int line = LineOf(key, at.line);
      if (!key.IsScalar()) {
        return Error(line, "keys in {} must be plain names, got {}", where, Describe(key));
      }
      const std::string& name = key.Scalar();
      if (auto [prev, inserted] = seen.emplace(name, line); !inserted) {
        return Error(line, "duplicate key '{}' in {} (first at line {})", name, where,
                     prev->second);
      }
      auto f = std::find_if(fields.begin(), fields.end(),
                            [&](const Field& field) { return field.name == name; });
      if (f == fields.end()) return UnknownKey(line, name, at.path, where, fields, others);
      Loc child{at.path.empty() ? name : fmt::format("{}.{}", at.path, name), line};
      lines_[child.path] = line;
      RETURN_IF_ERROR(f->read(value, child));
    }
    return Status::Ok();
  }

  // Line of a key that was set, or 0.
  int LineOfKey(std::string_view path) const {
    auto it = lines_.find(std::string(path));
    return it == lines_.end() ? 0 : it->second;
  }

  // --- Field readers. ---

  Handler Bool(bool* dst) const {
    return [this, dst](const YAML::Node& v, const Loc& at) -> Status {
      if (v.IsScalar()) {
        const std::string& s = v.Scalar();
        if (s == "true" || s == "True" || s == "TRUE") return *dst = true, Status::Ok();
        if (s == "false" || s == "False" || s == "FALSE") return *dst = false, Status::Ok();
      }
      return Error(at.line, "{}: expected true or false, got {}", at.path, Describe(v));
    };
  }

  template <typename T>
  Handler Int(T* dst, int64_t min, int64_t max) const {
    return [this, dst, min, max](const YAML::Node& v, const Loc& at) -> Status {
      std::string kind = min == 1   ? "a positive integer"
                         : min == 0 ? "a non-negative integer"
                                    : fmt::format("an integer >= {}", min);
      int64_t x = 0;
      if (!v.IsScalar() || !ParseInt64(Trim(v.Scalar()), &x) || x < min) {
        return Error(at.line, "{}: expected {}, got {}", at.path, kind, Describe(v));
      }
      if (x > max) {
        return Error(at.line, "{}: expected {} no larger than {}, got {}", at.path, kind, max,
                     Describe(v));
      }
      *dst = static_cast<T>(x);
      return Status::Ok();
    };
  }

  Handler PowerOfTwo(int* dst, int max) const {
    return [this, dst, max](const YAML::Node& v, const Loc& at) -> Status {
      int64_t x = 0;
      if (!v.IsScalar() || !ParseInt64(Trim(v.Scalar()), &x) || x < 1 || x > max ||
          (x & (x - 1)) != 0) {
        return Error(at.line, "{}: expected a power of two in 1..{}, got {}", at.path, max,
                     Describe(v));
      }
      *dst = static_cast<int>(x);
      return Status::Ok();
    };
  }

  // Seconds; `positive` excludes 0.
  Handler Seconds(double* dst, bool positive, double max) const {
    return [this, dst, positive, max](const YAML::Node& v, const Loc& at) -> Status {
      const char* kind =
          positive ? "a positive number of seconds" : "a non-negative number of seconds";
      double x = 0;
      if (!v.IsScalar() || !ParseFiniteDouble(Trim(v.Scalar()), &x) || x < 0 ||
          (positive && x == 0)) {
        return Error(at.line, "{}: expected {}, got {}", at.path, kind, Describe(v));
      }
      if (x > max) {
        return Error(at.line, "{}: expected {} no larger than {}, got {}", at.path, kind, max,
                     Describe(v));
      }
      *dst = x;
      return Status::Ok();
    };
  }

  Handler Bytes(int64_t* dst, int64_t max) const {
    return [this, dst, max](const YAML::Node& v, const Loc& at) -> Status {
      if (!v.IsScalar()) {
        return Error(at.line,
                     "{}: expected a size in bytes like 536870912, 512MiB or 1.5GB, got {}",
                     at.path, Describe(v));
      }
      Expected<int64_t> n = ParseByteSize(v.Scalar());
      if (!n.ok()) return Error(at.line, "{}: {}", at.path, n.status().message());
      if (*n > max) {
        return Error(at.line, "{}: {} bytes is more than the limit of {} bytes", at.path, *n, max);
      }
      *dst = *n;
      return Status::Ok();
    };
  }

  // Null reads as "".
  Handler String(std::string* dst, bool allow_empty) const {
    return [this, dst, allow_empty](const YAML::Node& v, const Loc& at) -> Status {
      if (v.IsNull() || v.IsScalar()) {
        std::string s = v.IsNull() ? "" : v.Scalar();
        if (!s.empty() || allow_empty) return *dst = std::move(s), Status::Ok();
      }
      return Error(at.line, "{}: expected a{} string, got {}", at.path,
                   allow_empty ? "" : " non-empty", Describe(v));
    };
  }

  Handler OneOf(std::string* dst, std::span<const std::string_view> allowed) const {
    return [this, dst, allowed](const YAML::Node& v, const Loc& at) -> Status {
      if (v.IsScalar() && std::find(allowed.begin(), allowed.end(), v.Scalar()) != allowed.end()) {
        *dst = v.Scalar();
        return Status::Ok();
      }
      if (!v.IsScalar()) {
        return Error(at.line, "{}: expected one of {}, got {}", at.path, fmt::join(allowed, ", "),
                     Describe(v));
      }
      return Error(at.line, "{}: {} is not one of {}", at.path, Describe(v),
                   fmt::join(allowed, ", "));
    };
  }

 private:
  static std::string Names(const std::vector<Field>& fields) {
    std::string out;
    for (const Field& f : fields) {
      if (!out.empty()) out += ", ";
      out += f.name;
    }
    return out;
  }

  Status UnknownKey(int line, const std::string& name, const std::string& path,
                    const std::string& where, const std::vector<Field>& fields,
                    const std::vector<Section>& others) const {
    std::string hint;
    size_t best = name.size() / 3 + 1;  // tolerate ~a third of the name mistyped
    for (const Field& f : fields) {
      if (size_t d = EditDistance(name, f.name); d <= best && d <= 3) {
        best = d;
        hint = fmt::format("; did you mean '{}'?", f.name);
      }
    }
    if (hint.empty()) {
      for (const Section& s : others) {
        if (s.name == path) continue;
        for (const Field& f : s.fields) {
          if (f.name == name) hint = fmt::format("; '{}' belongs in '{}'", name, s.name);
        }
      }
    }
    if (path.empty()) {
      return Error(line, "unknown top-level key '{}' (allowed: {}){}", name, Names(fields), hint);
    }
    return Error(line, "unknown key '{}' in {} (allowed: {}){}", name, where, Names(fields), hint);
  }

  std::string file_;
  std::map<std::string, int> lines_;
};

// The sections with their fields, bound to `c`. Ranges are sanity bounds: they
// catch typos and unit mistakes, not what a machine can do.
std::vector<Section> BuildSchema(const Reader& r, InferenceConfig& c) {
  auto& m = c.model;
  auto& s = c.scheduler;
  auto& k = c.cache;
  auto& o = c.response;
  auto& v = c.server;
  auto& l = c.limits;
  constexpr int64_t kIntMax = 2147483647;
  constexpr double kDay = 86400;
  return {
      {"model",
       {
           {"path", r.String(&m.path, true)},
           {"name", r.String(&m.name, true)},
           {"precision", r.OneOf(&m.precision, kPrecisions)},
           {"max_context_tokens", r.Int(&m.max_context_tokens, 0, kIntMax)},
       }},
      {"scheduler",
       {
           {"continuous_batching", r.Bool(&s.continuous_batching)},
           {"max_concurrent_sequences", r.Int(&s.max_concurrent_sequences, 1, 65536)},
           {"max_batch_tokens", r.Int(&s.max_batch_tokens, 1, 1 << 20)},
           {"prefill_chunk_tokens", r.Int(&s.prefill_chunk_tokens, 0, 1 << 20)},
           {"threads", r.Int(&s.threads, 0, 4096)},
           {"kv_cache_bytes", r.Bytes(&s.kv_cache_bytes, kMaxBytes)},
           {"aging_seconds", r.Seconds(&s.aging_seconds, false, kDay)},
       }},
      {"cache",
       {
           {"kv_cache", r.Bool(&k.kv_cache)},
           {"prefix_cache", r.Bool(&k.prefix_cache)},
           {"block_size", r.PowerOfTwo(&k.block_size, 256)},
           {"share_prefix_across_tenants", r.Bool(&k.share_prefix_across_tenants)},
       }},
      {"response",
       {
           {"streaming", r.Bool(&o.streaming)},
           {"cancel_on_disconnect", r.Bool(&o.cancel_on_disconnect)},
       }},
      {"server",
       {
           {"host", r.String(&v.host, false)},
           {"port", r.Int(&v.port, 0, 65535)},
           {"http_threads", r.Int(&v.http_threads, 1, 1024)},
           {"max_body_bytes", r.Bytes(&v.max_body_bytes, int64_t{1} << 30)},
           {"request_timeout_s", r.Seconds(&v.request_timeout_s, true, kDay)},
           {"idle_timeout_s", r.Seconds(&v.idle_timeout_s, true, kDay)},
           {"max_connections", r.Int(&v.max_connections, 1, 1000000)},
           {"drain_grace_s", r.Seconds(&v.drain_grace_s, false, kDay)},
       }},
      {"limits",
       {
           {"max_tokens", r.Int(&l.max_tokens, 1, 1 << 24)},
           {"default_max_tokens", r.Int(&l.default_max_tokens, 1, 1 << 24)},
           {"max_n", r.Int(&l.max_n, 1, 128)},
           {"max_queue_interactive", r.Int(&l.max_queue_interactive, 1, 1 << 24)},
           {"max_queue_batch", r.Int(&l.max_queue_batch, 1, 1 << 24)},
           {"default_timeout_s", r.Seconds(&l.default_timeout_s, true, 7 * kDay)},
           {"max_timeout_s", r.Seconds(&l.max_timeout_s, true, 7 * kDay)},
           {"max_stop_strings", r.Int(&l.max_stop_strings, 0, 64)},
       }},
  };
}

bool IsPrintableToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char ch : s) {
    if (ch <= 0x20 || ch == 0x7f) return false;
  }
  return true;
}

// keys: [{key|key_env, tenant, feature}, ...]
Status ReadKeys(const Reader& r, const YAML::Node& n, const Loc& at,
                std::vector<ApiKeyConfig>* out) {
  if (n.IsNull()) return Status::Ok();
  if (!n.IsSequence()) {
    return r.Error(at.line, "keys: expected a sequence of {{key, tenant, feature}} maps, got {}",
                   Describe(n));
  }
  std::vector<int> lines;
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node& e = n[i];
    Loc entry{fmt::format("keys[{}]", i), LineOf(e, at.line)};
    ApiKeyConfig key;
    std::string key_env;
    bool has_key = false, has_env = false, has_tenant = false;
    // A copy, so that key lines recorded for this entry stay with it.
    Reader er = r;
    std::vector<Field> fields = {
        {"key",
         [&](const YAML::Node& v, const Loc& loc) -> Status {
           has_key = true;
           if (!v.IsScalar() || !IsPrintableToken(v.Scalar())) {
             return r.Error(loc.line, "{}: expected a non-empty token without spaces", loc.path);
           }
           key.key = v.Scalar();
           return Status::Ok();
         }},
        {"key_env",
         [&](const YAML::Node& v, const Loc& loc) -> Status {
           has_env = true;
           return r.String(&key_env, false)(v, loc);
         }},
        {"tenant",
         [&](const YAML::Node& v, const Loc& loc) -> Status {
           has_tenant = true;
           return r.String(&key.tenant, false)(v, loc);
         }},
        {"feature", r.String(&key.feature, true)},
    };
    if (!e.IsMap()) {
      return r.Error(entry.line,
                     "{}: expected a map with keys key (or key_env), tenant, feature, "
                     "got {}",
                     entry.path, Describe(e));
    }
    RETURN_IF_ERROR(er.ReadMap(e, entry, fields, {}));
    if (has_key && has_env) {
      return r.Error(entry.line, "{}: set only one of 'key' and 'key_env'", entry.path);
    }
    if (!has_key && !has_env) {
      return r.Error(entry.line,
                     "{}: missing 'key' (or 'key_env': NAME to read it from the "
                     "environment)",
                     entry.path);
    }
    if (!has_tenant) {
      return r.Error(entry.line, "{}: missing 'tenant' (every API key belongs to a tenant)",
                     entry.path);
    }
    if (has_env) {
      int line = er.LineOfKey(entry.path + ".key_env");
      const char* value = std::getenv(key_env.c_str());
      if (value == nullptr) {
        return r.Error(line, "{}.key_env: environment variable '{}' is not set", entry.path,
                       key_env);
      }
      if (!IsPrintableToken(value)) {
        return r.Error(line, "{}.key_env: environment variable '{}' is empty or has spaces",
                       entry.path, key_env);
      }
      key.key = value;
    }
    // Never echo a key in a message: they are secrets.
    for (size_t j = 0; j < out->size(); ++j) {
      if ((*out)[j].key == key.key) {
        return r.Error(entry.line, "{}: duplicate API key (same as keys[{}] at line {})",
                       entry.path, j, lines[j]);
      }
    }
    out->push_back(std::move(key));
    lines.push_back(entry.line);
  }
  return Status::Ok();
}

// Checks that involve two keys; reported at the line of whichever was set.
Status CheckConsistency(const Reader& r, const InferenceConfig& c) {
  auto line = [&](std::string_view a, std::string_view b) {
    return std::max(r.LineOfKey(a), r.LineOfKey(b));
  };
  if (c.scheduler.prefill_chunk_tokens > c.scheduler.max_batch_tokens) {
    return r.Error(line("scheduler.prefill_chunk_tokens", "scheduler.max_batch_tokens"),
                   "scheduler.prefill_chunk_tokens ({}) must not exceed "
                   "scheduler.max_batch_tokens ({})",
                   c.scheduler.prefill_chunk_tokens, c.scheduler.max_batch_tokens);
  }
  if (c.cache.prefix_cache && !c.cache.kv_cache) {
    return r.Error(line("cache.prefix_cache", "cache.kv_cache"),
                   "cache.prefix_cache: true needs cache.kv_cache: true (set prefix_cache: "
                   "false to run without a KV cache)");
  }
  if (c.limits.default_max_tokens > c.limits.max_tokens) {
    return r.Error(line("limits.default_max_tokens", "limits.max_tokens"),
                   "limits.default_max_tokens ({}) must not exceed limits.max_tokens ({})",
                   c.limits.default_max_tokens, c.limits.max_tokens);
  }
  if (c.limits.default_timeout_s > c.limits.max_timeout_s) {
    return r.Error(line("limits.default_timeout_s", "limits.max_timeout_s"),
                   "limits.default_timeout_s ({}) must not exceed limits.max_timeout_s ({})",
                   c.limits.default_timeout_s, c.limits.max_timeout_s);
  }
  return Status::Ok();
}

// 1-based line whose leading whitespace holds a tab, or 0.
int FirstTabIndentedLine(std::string_view text) {
  int line = 1;
  bool at_start = true;
  for (char ch : text) {
    if (ch == '\n') {
      ++line;
      at_start = true;
    } else if (at_start && ch == '\t') {
      return line;
    } else if (ch != ' ') {
      at_start = false;
    }
  }
  return 0;
}

Expected<InferenceConfig> ParseDocument(const YAML::Node& doc, std::string_view filename) {
  InferenceConfig c;
  Reader r(filename);
  std::vector<Section> sections = BuildSchema(r, c);
  std::vector<Field> top;
  for (const Section& s : sections) {
    top.push_back({s.name, [&r, &s, &sections](const YAML::Node& v, const Loc& at) {
                     return r.ReadMap(v, at, s.fields, sections);
                   }});
  }
  top.push_back({"keys", [&r, &c](const YAML::Node& v, const Loc& at) {
                   return ReadKeys(r, v, at, &c.keys);
                 }});
  RETURN_IF_ERROR(r.ReadMap(doc, Loc{"", LineOf(doc, 1)}, top, sections));
  RETURN_IF_ERROR(CheckConsistency(r, c));
  return c;
}

}  // namespace

std::span<const std::string_view> PrecisionNames() { return kPrecisions; }

Expected<int64_t> ParseByteSize(std::string_view text) {
  std::string_view s = Trim(text);
  auto bad = [&] {
    return InvalidArgument("expected a size in bytes like 536870912, 512MiB or 1.5GB, got '{}'",
                           text);
  };
  size_t n = 0;
  while (n < s.size() && ((s[n] >= '0' && s[n] <= '9') || s[n] == '.')) ++n;
  std::string_view number = s.substr(0, n);
  std::string unit(Trim(s.substr(n)));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  static const std::pair<std::string_view, int64_t> kUnits[] = {
      {"", 1},
      {"b", 1},
      {"k", 1000},
      {"kb", 1000},
      {"m", 1000000},
      {"mb", 1000000},
      {"g", 1000000000},
      {"gb", 1000000000},
      {"t", 1000000000000},
      {"tb", 1000000000000},
      {"ki", int64_t{1} << 10},
      {"kib", int64_t{1} << 10},
      {"mi", int64_t{1} << 20},
      {"mib", int64_t{1} << 20},
      {"gi", int64_t{1} << 30},
      {"gib", int64_t{1} << 30},
      {"ti", int64_t{1} << 40},
      {"tib", int64_t{1} << 40},
  };
  auto u = std::find_if(std::begin(kUnits), std::end(kUnits),
                        [&](const auto& e) { return e.first == unit; });
  if (number.empty() || u == std::end(kUnits)) return bad();
  int64_t bytes = 0;
  if (number.find('.') == std::string_view::npos) {
    int64_t x = 0;
    if (!ParseInt64(number, &x)) return bad();
    if (__builtin_mul_overflow(x, u->second, &bytes)) bytes = kMaxBytes + 1;
  } else {
    double x = 0;
    if (!ParseFiniteDouble(number, &x)) return bad();
    long double b = static_cast<long double>(x) * u->second;
    bytes = b > kMaxBytes ? kMaxBytes + 1 : static_cast<int64_t>(b);
  }
  if (bytes < 1) return InvalidArgument("size must be at least 1 byte, got '{}'", text);
  if (bytes > kMaxBytes) return InvalidArgument("size '{}' is too large", text);
  return bytes;
}

Expected<InferenceConfig> ParseInferenceConfig(std::string_view yaml_text,
                                               std::string_view filename) {
  // yaml-cpp reports errors by throwing; this is the one place that catches.
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(std::string(yaml_text));
    if (docs.empty()) return InferenceConfig{};  // empty file or only comments
    if (docs.size() > 1) {
      return InvalidArgument("{}:{}: only one YAML document is allowed, found a second one here",
                             filename, LineOf(docs[1], 1));
    }
    return ParseDocument(docs[0], filename);
  } catch (const YAML::ParserException& e) {
    if (e.mark.is_null()) return InvalidArgument("{}: YAML syntax error: {}", filename, e.msg);
    // yaml-cpp's message for a tab in indentation ("illegal map value") does
    // not say what is wrong; point at the first such line up to the error.
    if (int tab_line = FirstTabIndentedLine(yaml_text);
        tab_line > 0 && tab_line <= e.mark.line + 1) {
      return InvalidArgument(
          "{}:{}: YAML syntax error: a tab is used for indentation; YAML "
          "indents with spaces",
          filename, tab_line);
    }
    return InvalidArgument("{}:{}: YAML syntax error at column {}: {}", filename, e.mark.line + 1,
                           e.mark.column + 1, e.msg);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("{}: YAML error: {}", filename, e.msg);
  } catch (const std::exception& e) {
    return Internal("{}: reading config: {}", filename, e.what());
  } catch (...) {
    return Internal("{}: reading config: unknown error", filename);
  }
}

Expected<InferenceConfig> LoadInferenceConfig(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) {
    return NotFound("config file '{}' does not exist", path);
  }
  if (ec) return InvalidArgument("cannot read config file '{}': {}", path, ec.message());
  if (fs::is_directory(st)) {
    return InvalidArgument("config file '{}' is a directory, expected a YAML file", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgument("cannot read config file '{}': {}", path, std::strerror(errno));
  }
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > kMaxConfigFileBytes) {
      return InvalidArgument("config file '{}' is larger than 16 MiB; is it the right file?", path);
    }
  }
  if (in.bad()) {
    return InvalidArgument("cannot read config file '{}': {}", path, std::strerror(errno));
  }
  return ParseInferenceConfig(text, path);
}

}  // namespace brisk
