#include "server/strict_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace brisk {
namespace {

using Json = nlohmann::ordered_json;

// ordered_json's object type is a std::vector of (const key, value) pairs
// whose insert searches the vector for the key first. The builder below
// appends through the vector directly, having checked for duplicates itself.
using ObjectVector = Json::object_t::Container;
static_assert(std::is_base_of_v<ObjectVector, Json::object_t>);

constexpr size_t kMaxKeyBytesInPath = 64;
constexpr size_t kMaxPathBytes = 160;
// Objects up to this many members look for a duplicate key by scanning; past
// it, by a hash set (built then, from the keys so far).
constexpr size_t kLinearScanMembers = 8;

// An open array or object. An object's members are gathered here and moved
// into the ordered_json at its end: the pairs here have non-const keys, so
// growing this vector moves them, where growing ordered_json's own vector
// (const keys) would deep-copy every value in it.
struct Frame {
  Json* value = nullptr;  // the array, or the object that receives `members` at its end
  bool is_object = false;
  size_t max_members = 0;
  std::vector<std::pair<std::string, Json>> members;
  std::optional<std::unordered_set<std::string>> keys;  // past kLinearScanMembers
};

class StrictBuilder final : public nlohmann::json_sax<Json> {
 public:
  explicit StrictBuilder(const JsonLimits& limits) : limits_(limits) {
    frames_.reserve(std::min<size_t>(limits.max_depth, 64) + 1);
  }

  bool null() override { return Scalar(Json(nullptr)); }
  bool boolean(bool v) override { return Scalar(Json(v)); }
  bool number_integer(number_integer_t v) override { return Scalar(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Scalar(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Scalar(Json(v)); }
  bool string(string_t& v) override { return Scalar(Json(v)); }
  bool binary(binary_t&) override { return Fail(JsonParseError::Kind::kSyntax, 0); }

  bool start_object(std::size_t) override { return Open(Json(Json::value_t::object), true); }
  bool start_array(std::size_t) override { return Open(Json(Json::value_t::array), false); }

  bool key(string_t& k) override {
    Frame& f = frames_.back();
    if (f.members.size() >= f.max_members) {
      return Fail(JsonParseError::Kind::kTooManyMembers, f.max_members, frames_.size() - 1);
    }
    if (IsDuplicate(f, k)) {
      error_.key = CutUtf8(k, kMaxKeyBytesInPath);
      return Fail(JsonParseError::Kind::kDuplicateKey, 0, frames_.size() - 1);
    }
    f.members.emplace_back(k, Json());
    return true;
  }

  bool end_object() override {
    Frame& f = frames_.back();
    auto& out = static_cast<ObjectVector&>(*f.value->get_ptr<Json::object_t*>());
    out.reserve(f.members.size());
    for (auto& [k, v] : f.members) out.emplace_back(std::move(k), std::move(v));
    frames_.pop_back();
    return true;
  }

  bool end_array() override {
    frames_.pop_back();
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // nlohmann counts bytes read (1-based); report the 0-based offset of the
    // byte where parsing stopped.
    error_.offset = position > 0 ? position - 1 : 0;
    // Drop the "[json.exception.parse_error.101] " prefix.
    std::string_view what = ex.what();
    if (size_t p = what.find("] "); p != std::string_view::npos) what.remove_prefix(p + 2);
    error_.reason = CutUtf8(what, 200);
    failed_ = true;
    error_.kind = JsonParseError::Kind::kSyntax;
    return false;
  }

  bool failed() const { return failed_; }
  JsonParseError& error() { return error_; }
  Json& root() { return root_; }

 private:
  // Puts `v` where the next value goes: the root, the end of the open
  // array, or the open object's last key. Returns where it went.
  Json* Place(Json&& v) {
    if (frames_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& f = frames_.back();
    if (f.is_object) {
      f.members.back().second = std::move(v);
      return &f.members.back().second;
    }
    auto& arr = *f.value->get_ptr<Json::array_t*>();
    arr.push_back(std::move(v));
    return &arr.back();
  }

  bool Scalar(Json&& v) {
    Place(std::move(v));
    return CountValue();
  }

  bool Open(Json&& container, bool is_object) {
    Json* where = Place(std::move(container));
    if (!CountValue()) return false;
    if (frames_.size() >= limits_.max_depth) {
      return Fail(JsonParseError::Kind::kTooDeep, limits_.max_depth, frames_.size());
    }
    Frame& f = frames_.emplace_back();
    f.value = where;
    f.is_object = is_object;
    if (is_object) f.max_members = MemberCap();
    return true;
  }

  bool CountValue() {
    if (++values_ <= limits_.max_values) return true;
    return Fail(JsonParseError::Kind::kTooManyValues, limits_.max_values, frames_.size());
  }

  // The cap of the object just opened (the innermost frame).
  size_t MemberCap() const {
    if (frames_.size() == 2 && frames_[0].is_object) {
      const std::string& top_key = frames_[0].members.back().first;
      for (const JsonMemberCap& c : limits_.member_caps) {
        if (c.top_level_key == top_key) return c.max_members;
      }
    }
    return limits_.max_object_members;
  }

  static bool IsDuplicate(Frame& f, const std::string& k) {
    if (f.keys) return !f.keys->insert(k).second;
    for (const auto& m : f.members) {
      if (m.first == k) return true;
    }
    if (f.members.size() + 1 > kLinearScanMembers) {
      f.keys.emplace();
      f.keys->reserve(2 * kLinearScanMembers);
      for (const auto& m : f.members) f.keys->insert(m.first);
      f.keys->insert(k);
    }
    return false;
  }

  bool Fail(JsonParseError::Kind kind, size_t limit, size_t path_frames = 0) {
    failed_ = true;
    error_.kind = kind;
    error_.limit = limit;
    error_.path = PathTo(path_frames);
    return false;
  }

  // The path of the value that frames_[n - 1] is filling (n = 0: the root).
  std::string PathTo(size_t n) const {
    std::string path;
    for (size_t i = 0; i < n && i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      if (f.is_object) {
        if (f.members.empty()) break;
        if (!path.empty()) path.push_back('.');
        path += CutUtf8(f.members.back().first, kMaxKeyBytesInPath);
      } else {
        const size_t size = f.value->size();
        if (size == 0) break;
        path += fmt::format("[{}]", size - 1);
      }
      if (path.size() > kMaxPathBytes) break;
    }
    return CutUtf8(path, kMaxPathBytes);
  }

  const JsonLimits& limits_;
  std::vector<Frame> frames_;
  Json root_;
  size_t values_ = 0;
  bool failed_ = false;
  JsonParseError error_;
};

}  // namespace

std::string CutUtf8(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t cut = max;
  while (cut > 0 && (static_cast<uint8_t>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

std::variant<nlohmann::ordered_json, JsonParseError> ParseStrictJson(std::string_view text,
                                                                     const JsonLimits& limits) {
  StrictBuilder builder(limits);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &builder,
                                  nlohmann::json::input_format_t::json, /*strict=*/true,
                                  /*ignore_comments=*/false);
  if (!ok || builder.failed()) return std::move(builder.error());
  return std::move(builder.root());
}

}  // namespace brisk
