#include "server/openai_logprobs.h"

#include <algorithm>

namespace brisk::api {
namespace {

using Json = nlohmann::ordered_json;

double Clamp(float lp) { return std::max(static_cast<double>(lp), double{kLogprobFloor}); }

Json Bytes(const std::string& s) {
  Json b = Json::array();
  for (char c : s) b.push_back(static_cast<uint8_t>(c));
  return b;
}

// Code points, counting each byte that does not continue a character.
int64_t Chars(const std::string& s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

Json ChatLogprobContent(std::span<const TokenLogprob> records, const Tokenizer& tok,
                        bool render_special) {
  Json content = Json::array();
  for (const TokenLogprob& r : records) {
    const std::string text = tok.TokenToPiece(r.token, render_special);
    Json top = Json::array();
    for (const auto& [id, lp] : r.top) {
      const std::string t = tok.TokenToPiece(id, render_special);
      top.push_back(Json{{"token", t}, {"logprob", Clamp(lp)}, {"bytes", Bytes(t)}});
    }
    content.push_back(Json{{"token", text},
                           {"logprob", Clamp(r.logprob)},
                           {"bytes", Bytes(text)},
                           {"top_logprobs", std::move(top)}});
  }
  return content;
}

Json ChatLogprobs(Json content) {
  return Json{{"content", std::move(content)}, {"refusal", nullptr}};
}

void AppendCompletionLogprobs(std::span<const TokenLogprob> records, const Tokenizer& tok,
                              bool render_special, bool first_null, int64_t* text_offset,
                              Json* out) {
  if (out->is_null())
    *out = Json{{"tokens", Json::array()},
                {"token_logprobs", Json::array()},
                {"top_logprobs", Json::array()},
                {"text_offset", Json::array()}};
  for (size_t i = 0; i < records.size(); ++i) {
    const TokenLogprob& r = records[i];
    const std::string text = tok.TokenToPiece(r.token, render_special);
    (*out)["tokens"].push_back(text);
    (*out)["text_offset"].push_back(*text_offset);
    *text_offset += Chars(text);
    if (i == 0 && first_null) {
      (*out)["token_logprobs"].push_back(nullptr);
      (*out)["top_logprobs"].push_back(nullptr);
      continue;
    }
    (*out)["token_logprobs"].push_back(Clamp(r.logprob));
    Json top = Json::object();
    for (const auto& [id, lp] : r.top) top[tok.TokenToPiece(id, render_special)] = Clamp(lp);
    if (!top.contains(text)) top[text] = Clamp(r.logprob);
    (*out)["top_logprobs"].push_back(std::move(top));
  }
}

}  // namespace brisk::api
