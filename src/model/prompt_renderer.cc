#include "model/prompt_renderer.h"

#include <algorithm>
#include <array>
#include <unordered_set>
#include <utility>

#include "model/gguf.h"

namespace brisk {

using OrderedJson = nlohmann::ordered_json;

// Views point into the tokenizer's vocab, which outlives the renderer.
struct PromptRenderer::SpecialStrings {
  std::array<bool, 256> first_byte{};
  std::vector<std::pair<size_t, std::unordered_set<std::string_view>>> by_len;  // longest first
  std::vector<std::string_view> sorted;  // the texts, sorted, unique
  std::vector<std::string> reversed;     // each text reversed, sorted, unique
  size_t max_len = 0;

  // Length of the longest control-token text starting at s[pos], 0 if none.
  size_t MatchAt(std::string_view s, size_t pos) const {
    if (!first_byte[static_cast<uint8_t>(s[pos])]) return 0;
    const std::string_view rest = s.substr(pos);
    for (const auto& [len, texts] : by_len) {
      if (len <= rest.size() && texts.count(rest.substr(0, len))) return len;
    }
    return 0;
  }
  // Longest k such that the last k bytes of s are a proper prefix of a text.
  size_t TailIsPrefix(std::string_view s) const {
    for (size_t k = std::min(s.size(), max_len - 1); k > 0; --k) {
      if (HasLongerWithPrefix(sorted, s.substr(s.size() - k))) return k;
    }
    return 0;
  }
  // Longest k such that the first k bytes of s are a proper suffix of a text.
  size_t HeadIsSuffix(std::string_view s) const {
    std::string rev;
    for (size_t k = std::min(s.size(), max_len - 1); k > 0; --k) {
      rev.assign(s.rbegin() + static_cast<ptrdiff_t>(s.size() - k), s.rend());
      if (HasLongerWithPrefix(reversed, rev)) return k;
    }
    return 0;
  }
  // Whether sorted, unique `v` holds a string longer than x starting with x.
  template <typename V>
  static bool HasLongerWithPrefix(const V& v, std::string_view x) {
    auto it = std::lower_bound(v.begin(), v.end(), x,
                               [](std::string_view a, std::string_view b) { return a < b; });
    if (it != v.end() && std::string_view(*it) == x) ++it;
    return it != v.end() && std::string_view(*it).starts_with(x);
  }
};

namespace {

// Placeholder: kOpen, decimal index, kClose. Neither byte occurs in UTF-8.
constexpr char kOpen = '\xFF';
constexpr char kClose = '\xFE';
// Message JSON deeper than this is refused (the API layer's is flat).
constexpr int kMaxDepth = 64;

// Python str.isspace(), which jinja's trim and str.strip() strip.
bool IsPySpace(uint32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Decodes the UTF-8 code point at s[i]; a bad byte decodes alone as U+FFFD.
uint32_t DecodeAt(std::string_view s, size_t i, size_t* len) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  const size_t n = b0 < 0x80           ? 1
                   : (b0 >> 5) == 0x6  ? 2
                   : (b0 >> 4) == 0xE  ? 3
                   : (b0 >> 3) == 0x1E ? 4
                                       : 0;
  if (n == 0 || i + n > s.size()) {
    *len = 1;
    return b0 < 0x80 ? b0 : 0xFFFD;
  }
  uint32_t cp = n == 1 ? b0 : b0 & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      *len = 1;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  *len = n;
  return cp;
}

// The bytes of s without leading and trailing Python whitespace.
TextRange Stripped(std::string_view s) {
  TextRange r{s.size(), s.size()};
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    const bool space = IsPySpace(DecodeAt(s, i, &len));
    if (!space) {
      if (r.begin == s.size()) r.begin = i;
      r.end = i + len;
    }
    i += len;
  }
  if (r.begin == s.size()) r.end = s.size();
  return r;
}

bool Covered(const std::vector<TextRange>& ranges, TextRange x) {
  for (const TextRange& r : ranges) {
    if (r.begin <= x.begin && x.end <= r.end) return true;
  }
  return false;
}

// Rewrites message strings: each protected range becomes a placeholder and
// its literal text is kept, in placeholder order.
class Protector {
 public:
  Protector(const PromptRenderer::SpecialStrings& sp, bool edges) : sp_(sp), edges_(edges) {}

  Expected<OrderedJson> Json(const OrderedJson& v, int depth) {
    if (depth > kMaxDepth) return InvalidArgument("messages are nested deeper than {}", kMaxDepth);
    switch (v.type()) {
      case OrderedJson::value_t::string: {
        ASSIGN_OR_RETURN(std::string s, String(v.get_ref<const std::string&>()));
        return OrderedJson(std::move(s));
      }
      case OrderedJson::value_t::array: {
        OrderedJson out = OrderedJson::array();
        for (const OrderedJson& e : v) {
          ASSIGN_OR_RETURN(OrderedJson x, Json(e, depth + 1));
          out.push_back(std::move(x));
        }
        return out;
      }
      case OrderedJson::value_t::object: {
        OrderedJson out = OrderedJson::object();
        for (auto it = v.begin(); it != v.end(); ++it) {
          ASSIGN_OR_RETURN(std::string key, String(it.key()));
          ASSIGN_OR_RETURN(OrderedJson x, Json(it.value(), depth + 1));
          out[std::move(key)] = std::move(x);
        }
        return out;
      }
      default: return v;
    }
  }

  const std::vector<std::string>& literals() const { return literals_; }
  // Some string has an edge that could start or end a control token and is
  // not already protected as a whole occurrence.
  bool edge_seen() const { return edge_seen_; }

 private:
  Expected<std::string> String(std::string_view s) {
    if (s.find_first_of(std::string_view("\xFF\xFE", 2)) != std::string_view::npos) {
      return InvalidArgument("message text is not valid UTF-8");
    }
    if (sp_.by_len.empty()) return std::string(s);
    std::vector<TextRange> ranges;
    for (size_t p = 0; p < s.size();) {
      const size_t len = sp_.MatchAt(s, p);
      if (len == 0) {
        ++p;
        continue;
      }
      ranges.push_back({p, p + len});
      p += len;
    }
    const TextRange t = Stripped(s);
    std::vector<TextRange> edges;
    for (size_t e : {s.size(), t.end}) {
      if (size_t k = sp_.TailIsPrefix(s.substr(0, e))) edges.push_back({e - k, e});
    }
    for (size_t b : {size_t{0}, t.begin}) {
      if (size_t k = sp_.HeadIsSuffix(s.substr(b))) edges.push_back({b, b + k});
    }
    for (const TextRange& r : edges) {
      if (Covered(ranges, r)) continue;
      edge_seen_ = true;
      if (edges_) ranges.push_back(r);
    }
    if (ranges.empty()) return std::string(s);
    std::sort(ranges.begin(), ranges.end(),
              [](const TextRange& a, const TextRange& b) { return a.begin < b.begin; });
    std::string out;
    out.reserve(s.size() + ranges.size() * 4);
    size_t done = 0;
    for (size_t i = 0; i < ranges.size();) {
      TextRange r = ranges[i++];
      while (i < ranges.size() && ranges[i].begin <= r.end)
        r.end = std::max(r.end, ranges[i++].end);
      out.append(s.substr(done, r.begin - done));
      out.push_back(kOpen);
      out += std::to_string(literals_.size());
      out.push_back(kClose);
      literals_.emplace_back(s.substr(r.begin, r.end - r.begin));
      done = r.end;
    }
    out.append(s.substr(done));
    return out;
  }

  const PromptRenderer::SpecialStrings& sp_;
  const bool edges_;
  bool edge_seen_ = false;
  std::vector<std::string> literals_;
};

// Puts the literal text back in place of each placeholder, recording where.
Expected<RenderedPrompt> Restore(std::string rendered, const std::vector<std::string>& literals) {
  RenderedPrompt out;
  if (literals.empty()) {
    out.text = std::move(rendered);
    return out;
  }
  const Status cut = InvalidArgument(
      "the chat template cut apart a special-token string in the messages, which must stay "
      "plain text; remove it from the message");
  out.text.reserve(rendered.size());
  for (size_t i = 0; i < rendered.size();) {
    const char c = rendered[i];
    if (c == kClose) return cut;
    if (c != kOpen) {
      out.text.push_back(c);
      ++i;
      continue;
    }
    size_t j = i + 1;
    size_t index = 0;
    while (j < rendered.size() && j - i <= 10 && rendered[j] >= '0' && rendered[j] <= '9') {
      index = index * 10 + static_cast<size_t>(rendered[j] - '0');
      ++j;
    }
    if (j == i + 1 || j >= rendered.size() || rendered[j] != kClose || index >= literals.size()) {
      return cut;
    }
    const std::string& lit = literals[index];
    out.plain.push_back({out.text.size(), out.text.size() + lit.size()});
    out.text += lit;
    i = j + 1;
  }
  return out;
}

// A render error's message may quote message text: put the literal text back
// (dropping any placeholder byte left over) so the message is UTF-8 again.
Status RestoreInError(const Status& st, const std::vector<std::string>& literals) {
  const std::string& msg = st.message();
  if (literals.empty() || msg.find_first_of(std::string_view("\xFF\xFE", 2)) == std::string::npos) {
    return st;
  }
  std::string out;
  for (size_t i = 0; i < msg.size(); ++i) {
    if (msg[i] == kClose) continue;
    if (msg[i] != kOpen) {
      out.push_back(msg[i]);
      continue;
    }
    size_t j = i + 1, index = 0;
    while (j < msg.size() && j - i <= 10 && msg[j] >= '0' && msg[j] <= '9') {
      index = index * 10 + static_cast<size_t>(msg[j] - '0');
      ++j;
    }
    if (j > i + 1 && j < msg.size() && msg[j] == kClose && index < literals.size()) {
      out += literals[index];
      i = j;
    }
  }
  return Status(st.code(), std::move(out));
}

// Gemma's turn format for models whose GGUF has no template: a system
// message prefixes the first turn, the assistant is "model", a message's text
// is its string or its text parts concatenated (each trimmed, as Gemma's own
// template does).
constexpr const char* kGemmaTurnTemplate =
    "{%- macro text(c) -%}"
    "{%- if c is string -%}{{ c | trim }}"
    "{%- else -%}{%- for p in c -%}{%- if p['type'] == 'text' -%}{{ p['text'] | trim }}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}"
    "{%- endmacro -%}"
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- if messages[0]['content'] is string -%}"
    "{%- set prefix = messages[0]['content'] + '\\n\\n' -%}"
    "{%- else -%}{%- set prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}{%- endif -%}"
    "{%- set turns = messages[1:] -%}"
    "{%- else -%}{%- set prefix = '' -%}{%- set turns = messages -%}{%- endif -%}"
    "{%- for m in turns -%}"
    "{%- set role = 'model' if m['role'] == 'assistant' else m['role'] -%}"
    "{{ '<start_of_turn>' + role + '\\n' + (prefix if loop.first else '') }}"
    "{{ text(m['content']) }}"
    "{{ '<end_of_turn>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}";

}  // namespace

PromptRenderer::PromptRenderer(const Tokenizer& tokenizer, std::optional<ChatTemplate> tmpl)
    : tokenizer_(tokenizer), tmpl_(std::move(tmpl)) {
  if (auto b = tokenizer.bos_id()) bos_text_ = tokenizer.TokenText(*b);
  if (auto e = tokenizer.eos_id()) eos_text_ = tokenizer.TokenText(*e);
  auto sp = std::make_unique<SpecialStrings>();
  std::vector<std::unordered_set<std::string_view>> by_len;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    const TokenType ty = tokenizer.token_type(id);
    if (ty != TokenType::kControl && ty != TokenType::kUnknown) continue;
    const std::string_view text = tokenizer.TokenText(id);
    if (text.empty()) continue;
    if (by_len.size() <= text.size()) by_len.resize(text.size() + 1);
    by_len[text.size()].insert(text);
    sp->first_byte[static_cast<uint8_t>(text[0])] = true;
    sp->max_len = std::max(sp->max_len, text.size());
    sp->sorted.push_back(text);
    sp->reversed.emplace_back(text.rbegin(), text.rend());
  }
  for (size_t len = by_len.size(); len-- > 0;) {
    if (!by_len[len].empty()) sp->by_len.emplace_back(len, std::move(by_len[len]));
  }
  std::sort(sp->sorted.begin(), sp->sorted.end());
  sp->sorted.erase(std::unique(sp->sorted.begin(), sp->sorted.end()), sp->sorted.end());
  std::sort(sp->reversed.begin(), sp->reversed.end());
  sp->reversed.erase(std::unique(sp->reversed.begin(), sp->reversed.end()), sp->reversed.end());
  specials_ = std::move(sp);
}

PromptRenderer::~PromptRenderer() = default;

Expected<std::unique_ptr<PromptRenderer>> PromptRenderer::FromGguf(const GgufFile& file,
                                                                   const Tokenizer& tokenizer) {
  std::optional<ChatTemplate> tmpl;
  if (file.Find("tokenizer.chat_template") != nullptr) {
    auto source = file.GetString("tokenizer.chat_template");
    if (!source.ok())
      return source.status().WithContext("reading the chat template of " + file.path());
    auto parsed = ChatTemplate::Parse(*source);
    if (!parsed.ok()) {
      return parsed.status().WithContext("parsing the chat template of " + file.path());
    }
    tmpl = std::move(parsed).value();
  } else if (auto arch = file.GetStringOr("general.architecture", "");
             arch.ok() && *arch == "gemma3") {
    // Gemma 3 GGUFs may carry no template; Gemma's turn format is fixed
    // (a system message is prefixed to the first user turn; the assistant
    // is "model"). Written for Brisk from the format's description.
    auto parsed = ChatTemplate::Parse(kGemmaTurnTemplate);
    if (!parsed.ok()) return parsed.status().WithContext("the built-in Gemma chat template");
    tmpl = std::move(parsed).value();
  }
  return std::make_unique<PromptRenderer>(tokenizer, std::move(tmpl));
}

Expected<std::unique_ptr<PromptRenderer>> PromptRenderer::FromTemplateText(
    const std::string& source, const std::string& template_path, const Tokenizer& tokenizer) {
  auto parsed = ChatTemplate::Parse(source);
  if (!parsed.ok())
    return parsed.status().WithContext("parsing the chat template " + template_path);
  return std::make_unique<PromptRenderer>(tokenizer, std::move(parsed).value());
}

Expected<RenderedPrompt> PromptRenderer::RenderChat(const OrderedJson& messages,
                                                    bool add_generation_prompt,
                                                    const OrderedJson* tools,
                                                    const OrderedJson* variables) const {
  if (!tmpl_) {
    return InvalidArgument(
        "this model has no chat template (tokenizer.chat_template); "
        "use /v1/completions with a prompt written out in full");
  }
  if (!messages.is_array()) return InvalidArgument("messages must be a JSON array");
  auto render = [&](bool edges, bool* edge_seen) -> Expected<RenderedPrompt> {
    Protector protector(*specials_, edges);
    ASSIGN_OR_RETURN(OrderedJson msgs, protector.Json(messages, 0));
    if (edge_seen != nullptr) *edge_seen = protector.edge_seen();
    OrderedJson ctx = OrderedJson::object();
    if (variables && variables->is_object()) {
      ASSIGN_OR_RETURN(ctx, protector.Json(*variables, 0));
    }
    ctx["messages"] = std::move(msgs);
    ctx["tools"] = nullptr;
    if (tools && !tools->empty()) {
      ASSIGN_OR_RETURN(ctx["tools"], protector.Json(*tools, 0));
    }
    ctx["documents"] = nullptr;
    ctx["add_generation_prompt"] = add_generation_prompt;
    ctx["bos_token"] = bos_text_;
    ctx["eos_token"] = eos_text_;
    auto text = tmpl_->RenderJson(ctx);
    if (!text.ok()) return RestoreInError(text.status(), protector.literals());
    return Restore(std::move(text).value(), protector.literals());
  };
  bool edge_seen = false;
  ASSIGN_OR_RETURN(RenderedPrompt whole, render(/*edges=*/false, &edge_seen));
  if (!edge_seen) return whole;
  // Edge placeholders only where the template treats them like the text they
  // stand for; a template that looked into the edge keeps its own output.
  auto edged = render(/*edges=*/true, nullptr);
  if (!edged.ok() || edged->text != whole.text) return whole;
  return edged;
}

Expected<std::vector<int32_t>> PromptRenderer::EncodeChat(const OrderedJson& messages,
                                                          const OrderedJson* tools,
                                                          const OrderedJson* variables) const {
  ASSIGN_OR_RETURN(RenderedPrompt p, RenderChat(messages, true, tools, variables));
  return EncodeRendered(p);
}

std::vector<int32_t> PromptRenderer::EncodeRendered(const RenderedPrompt& p,
                                                    bool add_special) const {
  // A template that writes the BOS itself gets no second one from the tokenizer.
  const bool has_bos = !bos_text_.empty() && p.text.starts_with(bos_text_);
  return tokenizer_.EncodeWithPlainRanges(p.text, add_special && !has_bos, p.plain);
}

std::vector<int32_t> PromptRenderer::EncodeCompletion(std::string_view prompt) const {
  return tokenizer_.Encode(prompt, /*add_special=*/true, /*parse_special=*/true);
}

}  // namespace brisk
