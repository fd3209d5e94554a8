#include "server/token_endpoints.h"

#include <fmt/format.h>

#include <limits>
#include <optional>

#include "server/openai_extensions.h"
#include "server/openai_fields.h"
#include "server/openai_prompt.h"
#include "util/utf8.h"

namespace brisk {
namespace {

using namespace api::fields;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// The body as an object, its unknown keys handled as the server is
// configured, and "model" (optional) checked against the served one.
Problem ReadCommon(const PreparationContext& ctx, std::string_view text,
                   std::initializer_list<std::string_view> known, Json* body,
                   TokenEndpointAnswer* answer) {
  BRISK_API_TRY(ParseBodyObject(text, body));
  std::vector<std::string>* ignored =
      ctx.config->server.unknown_request_fields == "ignore" ? &answer->ignored_fields : nullptr;
  for (const auto& [k, v] : body->items()) {
    bool is_known = k == "model";
    for (std::string_view name : known) is_known = is_known || k == name;
    if (!is_known) BRISK_API_TRY(UnknownKey(k, ignored));
  }
  if (const Json* m = Get(*body, "model")) {
    std::string model;
    BRISK_API_TRY(ReadString(*m, "model", &model));
    if (!model.empty() && model != ctx.model_id && ctx.config->server.model_names != "any") {
      return http::MakeOpenAiError(404, "invalid_request_error",
                                   "The model '" + Snippet(model) +
                                       "' does not exist; this server serves '" + ctx.model_id +
                                       "'",
                                   "model_not_found", "model");
    }
  }
  return std::nullopt;
}

Problem ReadOptionalBool(const Json& body, const char* key, std::optional<bool>* out) {
  if (const Json* v = Get(body, key)) {
    bool b = false;
    BRISK_API_TRY(ReadBool(*v, key, &b));
    *out = b;
  }
  return std::nullopt;
}

Problem TokenizeInto(const PreparationContext& ctx, std::string_view text,
                     TokenEndpointAnswer* answer) {
  Json body;
  BRISK_API_TRY(ReadCommon(ctx, text,
                           {"prompt", "messages", "add_special_tokens", "add_generation_prompt",
                            "return_token_strs", "chat_template_kwargs"},
                           &body, answer));
  const Json* prompt = Get(body, "prompt");
  const Json* messages = Get(body, "messages");
  if (!prompt == !messages) {
    return Bad(prompt ? "messages" : "prompt", "invalid_value",
               "Give exactly one of 'prompt' (a string) and 'messages' (a chat conversation)");
  }
  std::optional<bool> add_special, add_generation_prompt, return_strs;
  BRISK_API_TRY(ReadOptionalBool(body, "add_special_tokens", &add_special));
  BRISK_API_TRY(ReadOptionalBool(body, "add_generation_prompt", &add_generation_prompt));
  BRISK_API_TRY(ReadOptionalBool(body, "return_token_strs", &return_strs));

  const PromptRenderer& renderer = *ctx.renderer;
  std::vector<int32_t> tokens;
  if (prompt) {
    if (add_generation_prompt) {
      return Bad("add_generation_prompt", "invalid_value",
                 "'add_generation_prompt' applies to 'messages' only");
    }
    if (Get(body, "chat_template_kwargs")) {
      return Bad("chat_template_kwargs", "invalid_value",
                 "'chat_template_kwargs' applies to 'messages' only");
    }
    std::string s;
    BRISK_API_TRY(ReadString(*prompt, "prompt", &s));
    tokens = renderer.tokenizer().Encode(s, add_special.value_or(true), /*parse_special=*/true);
  } else {
    Json parsed;
    std::vector<std::string>* ignored =
        ctx.config->server.unknown_request_fields == "ignore" ? &answer->ignored_fields : nullptr;
    BRISK_API_TRY(ParseMessages(*messages, &parsed, ignored));
    if (!renderer.has_chat_template()) {
      return Bad("messages", "unsupported",
                 "This model has no chat template; tokenize a 'prompt' instead");
    }
    Json variables;
    if (const Json* v = Get(body, "chat_template_kwargs")) {
      BRISK_API_TRY(ParseChatTemplateKwargs(*v, &variables));
    }
    auto rendered = renderer.RenderChat(parsed, add_generation_prompt.value_or(true), nullptr,
                                        variables.is_object() ? &variables : nullptr);
    if (!rendered.ok()) {
      return Bad("messages", "invalid_value",
                 "The chat template rejected the messages: " + rendered.status().message());
    }
    tokens = renderer.EncodeRendered(*rendered, add_special.value_or(true));
  }
  Json out = Json::object();
  out["count"] = tokens.size();
  out["max_model_len"] = ctx.engine.context_limit;
  out["tokens"] = tokens;
  if (return_strs.value_or(false)) {
    Json strs = Json::array();
    for (int32_t t : tokens)
      strs.push_back(ToValidUtf8(renderer.tokenizer().TokenToPiece(t, /*render_special=*/true)));
    out["token_strs"] = std::move(strs);
  } else {
    out["token_strs"] = nullptr;
  }
  answer->body = Dump(out);
  return std::nullopt;
}

Problem DetokenizeInto(const PreparationContext& ctx, std::string_view text,
                       TokenEndpointAnswer* answer) {
  Json body;
  BRISK_API_TRY(ReadCommon(ctx, text, {"tokens"}, &body, answer));
  const Json* tokens = Get(body, "tokens");
  if (!tokens) return Missing("tokens");
  if (!tokens->is_array()) return TypeError("tokens", "an array of token ids", *tokens);
  const int32_t vocab = ctx.renderer->vocab_size();
  std::vector<int32_t> ids;
  ids.reserve(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const std::string p = fmt::format("tokens[{}]", i);
    int64_t id = 0;
    BRISK_API_TRY(ReadInt64((*tokens)[i], p, &id));
    if (id < 0 || id >= vocab) {
      return Bad(p, "invalid_value",
                 fmt::format("Token id {} is outside the vocabulary (vocabulary size {}: ids "
                             "0..{})",
                             id, vocab, vocab - 1));
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  const std::string decoded = ctx.renderer->tokenizer().Decode(ids, /*skip_special=*/false);
  answer->body = Dump(Json{{"prompt", ToValidUtf8(decoded)}});
  return std::nullopt;
}

template <typename Fn>
std::variant<TokenEndpointAnswer, api::ApiError> Run(Fn fn, const PreparationContext& ctx,
                                                     std::string_view body) {
  TokenEndpointAnswer answer;
  if (Problem p = fn(ctx, body, &answer)) return std::move(*p);
  return answer;
}

}  // namespace

std::variant<TokenEndpointAnswer, api::ApiError> Tokenize(const PreparationContext& ctx,
                                                          std::string_view body) {
  return Run(TokenizeInto, ctx, body);
}

std::variant<TokenEndpointAnswer, api::ApiError> Detokenize(const PreparationContext& ctx,
                                                            std::string_view body) {
  return Run(DetokenizeInto, ctx, body);
}

}  // namespace brisk
