#include "config/config_yaml.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "config/inference_config.h"

namespace brisk::config_yaml {

namespace {

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

std::string Names(const std::vector<Field>& fields) {
  std::string out;
  for (const Field& f : fields) {
    if (!out.empty()) out += ", ";
    out += f.name;
  }
  return out;
}

constexpr int64_t kMaxConfigFileBytes = int64_t{16} << 20;

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

// 1-based line of a document start marker ("---" alone or followed by a
// space) that follows a line with content, or 0. Comments and blank lines
// are not content; neither is a leading directive or the first marker.
int SecondDocumentLine(std::string_view text) {
  int line = 0;
  bool content = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(pos, end - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    ++line;
    const bool marker = l == "---" || l.starts_with("--- ") || l.starts_with("---\t");
    if (marker && content) return line;
    const size_t first = l.find_first_not_of(" \t");
    if (!marker && first != std::string_view::npos && l[first] != '#' && l[0] != '%') {
      content = true;
    }
    if (marker && l.size() > 4 && l.find_first_not_of(" \t", 4) != std::string_view::npos &&
        l[l.find_first_not_of(" \t", 4)] != '#') {
      content = true;  // "--- value": the document has content on its marker line
    }
    pos = end + 1;
  }
  return 0;
}

// 1-based line of the first line that is not blank, a comment, a document
// marker or directive, or an explicit null ("~", "null"); 0 if none.
int FirstContentLine(std::string_view text) {
  int line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = Trim(text.substr(pos, end - pos));
    if (!l.empty() && l.back() == '\r') l = Trim(l.substr(0, l.size() - 1));
    ++line;
    if (l.starts_with("---") || l.starts_with("...")) l = Trim(l.substr(3));
    const bool empty = l.empty() || l[0] == '#' || l[0] == '%' || l == "~" || l == "null" ||
                       l == "Null" || l == "NULL";
    if (!empty) return line;
    pos = end + 1;
  }
  return 0;
}

}  // namespace

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.starts_with('+')) s.remove_prefix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseFiniteDouble(std::string_view s, double* out) {
  if (s.starts_with('+')) s.remove_prefix(1);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*out);
}

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

std::vector<Field> Reader::SectionFields(const std::vector<Section>& sections) {
  std::vector<Field> top;
  for (const Section& s : sections) {
    top.push_back({s.name, [this, &s, &sections](const YAML::Node& v, const Loc& at) {
                     return ReadMap(v, at, s.fields, sections);
                   }});
  }
  return top;
}

Status Reader::ReadMap(const YAML::Node& map, const Loc& at, const std::vector<Field>& fields,
                       const std::vector<Section>& others) {
  std::string where = at.path.empty() ? std::string("the top level") : fmt::format("'{}'", at.path);
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
      return Error(line, "duplicate key '{}' in {} (first at line {})", name, where, prev->second);
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

int Reader::LineOfKey(std::string_view path) const {
  auto it = lines_.find(std::string(path));
  return it == lines_.end() ? 0 : it->second;
}

Handler Reader::Bool(bool* dst) const {
  return [this, dst](const YAML::Node& v, const Loc& at) -> Status {
    if (v.IsScalar()) {
      const std::string& s = v.Scalar();
      if (s == "true" || s == "True" || s == "TRUE") return *dst = true, Status::Ok();
      if (s == "false" || s == "False" || s == "FALSE") return *dst = false, Status::Ok();
    }
    return Error(at.line, "{}: expected true or false, got {}", at.path, Describe(v));
  };
}

Status Reader::ReadInt(const YAML::Node& v, const Loc& at, int64_t min, int64_t max,
                       int64_t* x) const {
  std::string kind = min == 1   ? "a positive integer"
                     : min == 0 ? "a non-negative integer"
                                : fmt::format("an integer >= {}", min);
  if (!v.IsScalar() || !ParseInt64(Trim(v.Scalar()), x) || *x < min) {
    return Error(at.line, "{}: expected {}, got {}", at.path, kind, Describe(v));
  }
  if (*x > max) {
    return Error(at.line, "{}: expected {} no larger than {}, got {}", at.path, kind, max,
                 Describe(v));
  }
  return Status::Ok();
}

Handler Reader::PowerOfTwo(int* dst, int max) const {
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

Handler Reader::Seconds(double* dst, bool positive, double max) const {
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

Handler Reader::Number(double* dst, double min, double max) const {
  return [this, dst, min, max](const YAML::Node& v, const Loc& at) -> Status {
    double x = 0;
    if (!v.IsScalar() || !ParseFiniteDouble(Trim(v.Scalar()), &x) || x < min || x > max)
      return Error(at.line, "{}: expected a number in {}..{}, got {}", at.path, min, max,
                   Describe(v));
    *dst = x;
    return Status::Ok();
  };
}

Handler Reader::Bytes(int64_t* dst, int64_t max) const {
  return [this, dst, max](const YAML::Node& v, const Loc& at) -> Status {
    if (!v.IsScalar()) {
      return Error(at.line, "{}: expected a size in bytes like 536870912, 512MiB or 1.5GB, got {}",
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

Handler Reader::String(std::string* dst, bool allow_empty) const {
  return [this, dst, allow_empty](const YAML::Node& v, const Loc& at) -> Status {
    if (v.IsNull() || v.IsScalar()) {
      std::string s = v.IsNull() ? "" : v.Scalar();
      if (!s.empty() || allow_empty) return *dst = std::move(s), Status::Ok();
    }
    return Error(at.line, "{}: expected a{} string, got {}", at.path,
                 allow_empty ? "" : " non-empty", Describe(v));
  };
}

Handler Reader::OneOf(std::string* dst, std::span<const std::string_view> allowed) const {
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

Status Reader::UnknownKey(int line, const std::string& name, const std::string& path,
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

Status WithYamlDocument(std::string_view yaml_text, std::string_view filename,
                        const std::function<Status(const YAML::Node& doc)>& parse) {
  // YAML allows no C0 control characters but tab, LF and CR (and no DEL);
  // yaml-cpp 0.7 can loop forever on some (found by fuzzing: "\n,\x04"), so
  // they are refused before it sees them.
  int line = 1;
  for (unsigned char ch : yaml_text) {
    if (ch == '\n') ++line;
    if ((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') || ch == 0x7f) {
      return InvalidArgument("{}:{}: control character 0x{:02x} is not allowed in YAML", filename,
                             line, ch);
    }
  }
  // yaml-cpp reports errors by throwing; this is the one place that catches.
  try {
    // YAML::LoadAll loops forever on some inputs (yaml-cpp 0.7, found by
    // fuzzing: ",-"); Load does not. A second document is found by its
    // start marker instead: a "---" line after content.
    if (int second = SecondDocumentLine(yaml_text); second > 0) {
      return InvalidArgument("{}:{}: only one YAML document is allowed, found a second one here",
                             filename, second);
    }
    YAML::Node doc = YAML::Load(std::string(yaml_text));
    if (!doc.IsDefined() || doc.IsNull()) {
      // yaml-cpp also gives Null for some text it cannot parse (",-"):
      // only comments, markers and an explicit null are an empty document.
      if (int line = FirstContentLine(yaml_text); line > 0) {
        return InvalidArgument("{}:{}: YAML syntax error: cannot parse this line", filename, line);
      }
      return parse(YAML::Node(YAML::NodeType::Null));
    }
    return parse(doc);
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

Expected<std::string> ReadConfigFile(const std::string& path) {
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
  return text;
}

}  // namespace brisk::config_yaml
