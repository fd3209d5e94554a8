#include "server/request_preparation.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "http/caller_identity.h"
#include "server/openai_tools.h"
#include "server/structured_output.h"

namespace brisk {

namespace {

api::ApiError Invalid(std::string message, std::string code = "invalid_value",
                      std::string param = "") {
  return http::MakeOpenAiError(400, "invalid_request_error", std::move(message), std::move(code),
                               std::move(param));
}

// The server's caps on what one request may ask for.
std::optional<api::ApiError> CheckLimits(const InferenceConfig& config, const api::ApiRequest& ar) {
  const auto& lim = config.limits;
  if (ar.n > lim.max_n)
    return Invalid(fmt::format("n = {} is over this server's limit of {}", ar.n, lim.max_n),
                   "invalid_value", "n");
  if (ar.n > config.scheduler.max_concurrent_sequences)
    return Invalid(fmt::format("n = {} samples can never run at once: at most {} sequences run "
                               "together (scheduler.max_concurrent_sequences)",
                               ar.n, config.scheduler.max_concurrent_sequences),
                   "invalid_value", "n");
  if (static_cast<int>(ar.stop.size()) > lim.max_stop_strings)
    return Invalid(fmt::format("At most {} stop strings are allowed", lim.max_stop_strings),
                   "invalid_value", "stop");
  if (ar.max_tokens && *ar.max_tokens > lim.max_tokens)
    return Invalid(fmt::format("max_tokens = {} is over this server's limit of {}", *ar.max_tokens,
                               lim.max_tokens),
                   "invalid_value", "max_tokens");
  if (ar.min_tokens > lim.max_tokens)
    return Invalid(fmt::format("min_tokens = {} is over this server's max_tokens limit of {}",
                               ar.min_tokens, lim.max_tokens),
                   "invalid_value", "min_tokens");
  const size_t n_prompts = ar.prompts.size() + ar.prompt_tokens.size();
  if (n_prompts > static_cast<size_t>(lim.max_prompts_per_request))
    return Invalid(fmt::format("{} prompts in one request; this server's limit is {}", n_prompts,
                               lim.max_prompts_per_request),
                   "invalid_value", "prompt");
  if (ar.stream && !config.response.streaming)
    return Invalid("Streaming is disabled on this server", "unsupported", "stream");
  return std::nullopt;
}

// Token ids the request names besides its prompt (logit_bias, stop_token_ids)
// must exist in the model's vocabulary.
std::optional<api::ApiError> CheckTokenIds(const PreparationContext& ctx,
                                           const api::ApiRequest& ar) {
  const int32_t vocab = ctx.engine.vocab_size;
  for (const auto& [id, bias] : ar.sampling.logit_bias)
    if (id >= vocab)
      return Invalid(fmt::format("logit_bias token id {} is outside the vocabulary (vocabulary "
                                 "size {}: ids 0..{})",
                                 id, vocab, vocab - 1),
                     "invalid_value", "logit_bias");
  for (int32_t id : ar.stop_token_ids)
    if (id >= vocab)
      return Invalid(fmt::format("stop_token_ids: token id {} is outside the vocabulary "
                                 "(vocabulary size {}: ids 0..{})",
                                 id, vocab, vocab - 1),
                     "invalid_value", "stop_token_ids");
  return std::nullopt;
}

// The body's "priority", else the X-Priority header, else interactive.
std::variant<Priority, api::ApiError> RequestPriority(const api::ApiRequest& ar,
                                                      const http::Request& req) {
  if (ar.priority) return *ar.priority;
  if (auto h = req.Header("X-Priority"); !h.empty()) {
    auto p = api::ParsePriority(h);
    if (!p.ok()) return Invalid("X-Priority must be 'interactive' or 'batch'");
    return *p;
  }
  return Priority::kInteractive;
}

// The body's "timeout", else the X-Request-Timeout header, else the default;
// capped by the server's maximum.
std::variant<double, api::ApiError> RequestTimeout(const InferenceConfig& config,
                                                   const api::ApiRequest& ar,
                                                   const http::Request& req) {
  double timeout_s = config.limits.default_timeout_s;
  if (ar.timeout_s) {
    timeout_s = *ar.timeout_s;
  } else if (auto h = req.Header("X-Request-Timeout"); !h.empty()) {
    char* end = nullptr;
    std::string hv(h);
    const double v = std::strtod(hv.c_str(), &end);
    if (end == hv.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0)
      return Invalid("X-Request-Timeout must be a positive number of seconds");
    timeout_s = v;
  }
  return std::min(timeout_s, config.limits.max_timeout_s);
}

// Prompts -> token ids: the chat template for chat, the raw prompts (text or
// ids) for completions.
// Chat: also where the output starts with respect to the reasoning markers.
std::variant<std::vector<std::vector<int32_t>>, api::ApiError> Tokenize(
    const PreparationContext& ctx, api::ApiRequest& ar, ReasoningStart* reasoning_start) {
  std::vector<std::vector<int32_t>> prompts;
  if (ar.endpoint == api::Endpoint::kChatCompletions) {
    if (!ctx.renderer->has_chat_template())
      return Invalid("This model has no chat template; use /v1/completions", "unsupported");
    auto rendered = ctx.renderer->RenderChat(
        ar.messages, /*add_generation_prompt=*/true, ar.tools ? &ar.tools->template_tools : nullptr,
        ar.chat_template_kwargs.is_object() ? &ar.chat_template_kwargs : nullptr);
    if (!rendered.ok())
      return Invalid("The chat template rejected the messages: " + rendered.status().message(),
                     "invalid_value", "messages");
    *reasoning_start = PromptReasoningStart(rendered->text, ctx.reasoning);
    prompts.push_back(ctx.renderer->EncodeRendered(*rendered));
    return prompts;
  }
  for (const auto& p : ar.prompts) prompts.push_back(ctx.renderer->EncodeCompletion(p));
  const int32_t vocab = ctx.engine.vocab_size;
  for (auto& p : ar.prompt_tokens) {
    for (int32_t t : p)
      if (t < 0 || t >= vocab)
        return Invalid(fmt::format("Token id {} is outside the vocabulary (0..{})", t, vocab - 1),
                       "invalid_value", "prompt");
    prompts.push_back(std::move(p));
  }
  return prompts;
}

// max_tokens for one prompt, or the context_length_exceeded error.
std::variant<int, api::ApiError> MaxTokensFor(const PreparationContext& ctx,
                                              const api::ApiRequest& ar, int64_t n_prompt) {
  const int64_t ctx_len = ctx.engine.context_limit;
  if (n_prompt == 0) return Invalid("The prompt is empty", "invalid_value", "prompt");
  const int64_t room = ctx_len - n_prompt;
  // Without max_tokens, the default grows to min_tokens if that asks for more.
  const int64_t want =
      ar.max_tokens
          ? *ar.max_tokens
          : std::min<int64_t>(std::max(ctx.config->limits.default_max_tokens, ar.min_tokens), room);
  if (room < 1 || n_prompt + want > ctx_len) {
    const int64_t shown = std::max<int64_t>(want, 1);
    return Invalid(
        fmt::format("This model's maximum context length is {} tokens. However, you requested {} "
                    "tokens ({} in the prompt, {} for the completion). Please reduce the prompt "
                    "or max_tokens.",
                    ctx_len, n_prompt + shown, n_prompt, shown),
        "context_length_exceeded",
        ar.max_tokens ? "max_tokens"
                      : (ar.endpoint == api::Endpoint::kCompletions ? "prompt" : "messages"));
  }
  if (ar.min_tokens > want)  // only without max_tokens: the parser checked it against that
    return Invalid(fmt::format("min_tokens = {} does not fit: the context has room for {} more "
                               "tokens after the prompt",
                               ar.min_tokens, want),
                   "context_length_exceeded", "min_tokens");
  return static_cast<int>(want);
}

// Tools: which tool_choice applies (openai_tools.h), and for a forced call
// its grammar as the request's constraint. With response_format (or the
// Responses API's text.format): under "auto" the answer takes the format (no
// tool call); a forced call is constrained by the tools' schemas alone, and the
// format is for the text the model writes in a later turn (as OpenAI's API
// treats it, and as instructor's Responses tools mode sends it).
std::optional<api::ApiError> PrepareToolConstraint(const PreparationContext& ctx,
                                                   const api::ApiRequest& ar,
                                                   PreparedRequest* out) {
  using Kind = api::ToolChoice::Kind;
  const api::ToolsRequest& tr = *ar.tools;
  Kind kind = tr.choice.kind;
  if (kind == Kind::kAuto && ar.response_format)
    kind = Kind::kNone;  // the answer takes the response_format
  const bool lazy = kind == Kind::kAuto;
  out->tool_choice = kind == Kind::kNone    ? "none"
                     : kind == Kind::kNamed ? "named"
                     : lazy                 ? "auto"
                                            : "required";
  if (kind == Kind::kNone) return std::nullopt;
  // Each tool's parameters on their own first, so an error names the tool.
  for (size_t i = 0; i < tr.tools.size(); ++i) {
    const api::ToolDef& t = tr.tools[i];
    const std::string param = fmt::format("tools[{}].function.parameters", i);
    auto c = CompileJsonSchemaText(t.parameters);
    if (!c.ok())
      return Invalid(
          fmt::format("'{}' is not a usable JSON Schema: {}", param, c.status().message()),
          "invalid_value", param);
    if (t.strict && !c->unenforced.empty())
      return Invalid(fmt::format("'{}': strict is true, but this server cannot enforce {} at "
                                 "'{}'; remove it or send strict: false",
                                 param, c->unenforced[0].keyword, c->unenforced[0].pointer),
                     "unsupported", param);
  }
  const bool named = kind == Kind::kNamed;
  api::ResponseFormat rf;
  rf.kind = api::ResponseFormat::Kind::kJsonSchema;
  rf.name = "tool_call";
  // "auto": calls found in free text by their trigger, in the template's
  // form (one, or with parallel_tool_calls several: openai_tools.h).
  api::AutoToolCalls autos;
  if (lazy) {
    const ChatTemplate* tmpl = ctx.renderer->chat_template();
    autos = api::AutoToolCallFormat(tmpl ? tmpl->source() : std::string(), tr.parallel);
  }
  const api::ToolCallShape shape = lazy          ? autos.shape
                                   : tr.parallel ? api::ToolCallShape::kArray
                                                 : api::ToolCallShape::kOne;
  rf.schema = api::ToolCallSchema(tr.tools, named ? &tr.choice.name : nullptr, shape);
  auto c = PrepareConstraint(ctx.constraints, rf, autos.separator, autos.separator_end);
  if (auto* e = std::get_if<api::ApiError>(&c)) {
    e->param = "tools";
    return *e;
  }
  auto& pc = std::get<PreparedConstraint>(c);
  out->constraint = std::move(pc.constraint);
  out->constraint_compiled_now = pc.compiled_now;
  out->unenforced_keywords = std::move(pc.unenforced);
  out->parallel_tool_calls = !named && tr.parallel;
  if (lazy) out->constraint_trigger = std::move(autos.trigger);
  return std::nullopt;
}

}  // namespace

std::string_view RemoteHost(std::string_view remote) {
  const size_t colon = remote.rfind(':');
  if (colon == std::string_view::npos || remote.find(']', colon) != std::string_view::npos)
    return remote;
  remote = remote.substr(0, colon);
  if (remote.size() >= 2 && remote.front() == '[' && remote.back() == ']')
    remote = remote.substr(1, remote.size() - 2);
  return remote;
}

std::variant<Caller, api::ApiError> Authenticate(const InferenceConfig& config,
                                                 std::string_view auth) {
  if (config.keys.empty()) return Caller{};
  const ApiKeyConfig* key = ResolveCaller(config.keys, auth);
  if (!key) return UnauthorizedError(auth);
  return Caller{key->tenant, key->feature};
}

std::variant<PreparedRequest, api::ApiError> PrepareRequest(const PreparationContext& ctx,
                                                            api::Endpoint endpoint,
                                                            const http::Request& req,
                                                            Clock::time_point arrival) {
  const InferenceConfig& config = *ctx.config;
  auto caller = Authenticate(config, req.Header("Authorization"));
  if (auto* e = std::get_if<api::ApiError>(&caller)) return *e;

  const api::ParseOptions options{
      .ignore_unknown_fields = config.server.unknown_request_fields == "ignore",
      .default_model = ctx.model_id};
  auto parsed = api::ParseRequest(endpoint, req.body, options);
  if (auto* e = std::get_if<api::ApiError>(&parsed)) return *e;
  api::ApiRequest& ar = std::get<api::ApiRequest>(parsed);
  if (ar.model != ctx.model_id && config.server.model_names == "any") ar.model = ctx.model_id;
  if (ar.model != ctx.model_id)
    return http::MakeOpenAiError(
        404, "invalid_request_error",
        "The model '" + ar.model + "' does not exist; this server serves '" + ctx.model_id + "'",
        "model_not_found", "model");
  if (auto e = CheckLimits(config, ar)) return *e;
  if (auto e = CheckTokenIds(ctx, ar)) return *e;
  auto priority = RequestPriority(ar, req);
  if (auto* e = std::get_if<api::ApiError>(&priority)) return *e;
  auto timeout_s = RequestTimeout(config, ar, req);
  if (auto* e = std::get_if<api::ApiError>(&timeout_s)) return *e;
  // Every prompt x sample is a sequence that waits in the queue of its
  // priority: a request that can never be admitted whole is a 400, not a 429.
  const int64_t sequences = int64_t{ar.n} * static_cast<int64_t>(std::max<size_t>(
                                                1, ar.prompts.size() + ar.prompt_tokens.size()));
  const int queue_cap = std::get<Priority>(priority) == Priority::kBatch
                            ? config.scheduler.max_waiting[1]
                            : config.scheduler.max_waiting[0];
  if (sequences > queue_cap)
    return Invalid(fmt::format("This request needs {} sequences (prompts x n) but at most {} may "
                               "wait at its priority",
                               sequences, queue_cap),
                   "invalid_value", "n");

  ReasoningStart reasoning_start = ReasoningStart::kClosed;
  auto prompts = Tokenize(ctx, ar, &reasoning_start);
  if (auto* e = std::get_if<api::ApiError>(&prompts)) return *e;

  PreparedRequest out;
  out.endpoint = endpoint;
  out.tenant = std::get<Caller>(caller).tenant;
  out.feature = std::get<Caller>(caller).feature;
  if (out.feature.empty()) out.feature = std::string(req.Header("X-Feature"));
  out.priority = std::get<Priority>(priority);
  out.stream = ar.stream;
  out.include_usage = ar.include_usage;
  out.continuous_usage = ar.continuous_usage;
  out.ignored_fields = std::move(ar.ignored_fields);
  out.n = ar.n;
  out.logprobs = ar.logprobs;
  out.render_special = !ar.skip_special_tokens;
  const auto deadline =
      arrival + std::chrono::microseconds(static_cast<int64_t>(std::get<double>(timeout_s) * 1e6));
  const std::string salt = config.cache.share_prefix_across_tenants ? "" : out.tenant;
  // Running slots are shared between callers: the key's tenant, or without
  // keys the client's address (its port dropped: one host, one share).
  const std::string fair_tenant =
      out.tenant.empty() ? "addr:" + std::string(RemoteHost(req.remote)) : "key:" + out.tenant;
  if (ar.tools) {
    auto tc = PrepareToolConstraint(ctx, ar, &out);
    if (tc) return *tc;
  }
  const bool tool_call_forced = out.tool_choice == "required" || out.tool_choice == "named";
  if (ar.response_format && !tool_call_forced) {
    auto c = PrepareConstraint(ctx.constraints, *ar.response_format);
    if (auto* e = std::get_if<api::ApiError>(&c)) return *e;
    auto& pc = std::get<PreparedConstraint>(c);
    out.constraint = std::move(pc.constraint);
    out.constraint_compiled_now = pc.compiled_now;
    out.unenforced_keywords = std::move(pc.unenforced);
  }
  if (ar.guided) {  // structured_outputs regex / choice / grammar (openai_guided.h)
    auto c = PrepareGuidedConstraint(ctx.constraints, *ar.guided);
    if (auto* e = std::get_if<api::ApiError>(&c)) return *e;
    auto& pc = std::get<PreparedConstraint>(c);
    out.constraint = std::move(pc.constraint);
    out.constraint_compiled_now = pc.compiled_now;
  }
  if (endpoint == api::Endpoint::kChatCompletions && ctx.reasoning.enabled()) {
    out.reasoning = ctx.reasoning;
    out.reasoning_start = reasoning_start;
    // A constraint holds for the answer: after the reasoning, from its end
    // marker on. A template that lets the model choose gets the block opened
    // here (as the model would open it), so the answer comes after it. Under
    // tool_choice "auto" the call's own trigger decides (the reasoning comes
    // before a call, never inside it).
    if (out.constraint && out.constraint_trigger.text.empty() &&
        reasoning_start != ReasoningStart::kClosed) {
      if (reasoning_start == ReasoningStart::kOpen) {
        const std::vector<int32_t> open = ctx.renderer->tokenizer().Encode(
            ctx.reasoning.start + "\n", /*add_special=*/false, /*parse_special=*/true);
        for (auto& tokens : std::get<std::vector<std::vector<int32_t>>>(prompts))
          tokens.insert(tokens.end(), open.begin(), open.end());
        out.reasoning_start = ReasoningStart::kInside;
      }
      out.constraint_trigger = ConstraintTrigger(ctx.reasoning.end, /*at_start=*/false,
                                                 /*in_grammar=*/false);
      out.constraint_after_reasoning = true;
    }
  }
  for (auto& tokens : std::get<std::vector<std::vector<int32_t>>>(prompts)) {
    // Echo: text prompts as given, token-id prompts (after them) decoded
    // with their special tokens: the prompt as sent (skip_special_tokens is
    // about the generated text).
    if (ar.echo) {
      out.echo_token_prompts = ar.prompts.empty();
      const size_t i = out.prompts.size();
      out.echo_prompts.push_back(
          i < ar.prompts.size() ? ar.prompts[i]
                                : ctx.renderer->tokenizer().Decode(tokens, /*skip_special=*/false));
    }
    auto max_tokens = MaxTokensFor(ctx, ar, static_cast<int64_t>(tokens.size()));
    if (auto* e = std::get_if<api::ApiError>(&max_tokens)) return *e;
    GenerationRequest g;
    g.prompt = std::move(tokens);
    g.sampling = ar.sampling;
    g.max_tokens = std::get<int>(max_tokens);
    g.n = ar.n;
    g.stop = ar.stop;
    g.ignore_eos = ar.ignore_eos;
    g.min_tokens = ar.min_tokens;
    g.stop_token_ids = ar.stop_token_ids;
    g.include_stop_str_in_output = ar.include_stop_str_in_output;
    g.skip_special_tokens = ar.skip_special_tokens;
    g.speculate = ar.speculative;
    g.priority = out.priority;
    g.arrival = arrival;
    g.deadline = deadline;
    g.cache_salt = salt;
    g.tenant = fair_tenant;
    g.constraint = out.constraint;
    g.constraint_trigger = out.constraint_trigger;
    g.logprobs = ar.logprobs;
    g.prompt_logprobs = ar.echo && ar.logprobs >= 0;
    out.prompts.push_back(std::move(g));
  }
  return out;
}

}  // namespace brisk
