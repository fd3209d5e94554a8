#include "http/openai_answer.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>

#include "http/upstream_client.h"

namespace brisk::http {

using Json = nlohmann::json;

namespace {

constexpr size_t kMaxJudgedText = size_t{1} << 20;

const Json* Find(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int64_t IntOr(const Json* j, const char* key) {
  const Json* v = j ? Find(*j, key) : nullptr;
  return v && v->is_number_integer() ? v->get<int64_t>() : 0;
}

void ReadUsage(const Json& usage, AnswerFacts* f) {
  if (!usage.is_object()) return;
  f->usage_seen = true;
  f->tokens.prompt = IntOr(&usage, "prompt_tokens");
  f->tokens.output = IntOr(&usage, "completion_tokens");
  f->tokens.cached = IntOr(Find(usage, "prompt_tokens_details"), "cached_tokens");
}

void AppendText(const Json* s, AnswerFacts* f) {
  if (s == nullptr || !s->is_string()) return;
  const std::string& t = s->get_ref<const std::string&>();
  if (t.empty()) return;
  ++f->content_chunks;
  if (f->text.size() < kMaxJudgedText) f->text += t.substr(0, kMaxJudgedText - f->text.size());
}

// Token logprobs: chat's logprobs.content[].logprob, completions'
// logprobs.token_logprobs[].
void AddLogprobs(const Json* lp, AnswerFacts* f) {
  if (lp == nullptr) return;
  if (const Json* content = Find(*lp, "content"); content && content->is_array()) {
    for (const Json& t : *content) {
      if (const Json* v = Find(t, "logprob"); v && v->is_number()) {
        f->logprob_sum += v->get<double>();
        ++f->logprob_count;
      }
    }
  }
  if (const Json* tl = Find(*lp, "token_logprobs"); tl && tl->is_array()) {
    for (const Json& v : *tl) {
      if (v.is_number()) {
        f->logprob_sum += v.get<double>();
        ++f->logprob_count;
      }
    }
  }
}

const Json* FirstChoice(const Json& body) {
  const Json* choices = Find(body, "choices");
  if (choices == nullptr || !choices->is_array()) return nullptr;
  for (const Json& c : *choices) {
    const Json* index = Find(c, "index");
    if (index == nullptr || (index->is_number_integer() && index->get<int64_t>() == 0)) return &c;
  }
  return nullptr;
}

}  // namespace

void ReadChunk(const Json& chunk, AnswerFacts* f) {
  if (const Json* usage = Find(chunk, "usage")) ReadUsage(*usage, f);
  if (const Json* error = Find(chunk, "error")) f->error = *error;
  const Json* choice = FirstChoice(chunk);
  if (choice == nullptr) return;
  if (const Json* delta = Find(*choice, "delta")) {
    AppendText(Find(*delta, "content"), f);
    if (const Json* calls = Find(*delta, "tool_calls"); calls && !calls->empty()) {
      ++f->content_chunks;
    }
  }
  AppendText(Find(*choice, "text"), f);
  AddLogprobs(Find(*choice, "logprobs"), f);
  if (const Json* fr = Find(*choice, "finish_reason"); fr && fr->is_string()) {
    f->finish_reason = fr->get<std::string>();
  }
}

AnswerFacts ReadAnswer(const Json& body) {
  AnswerFacts f;
  if (const Json* usage = Find(body, "usage")) ReadUsage(*usage, &f);
  if (const Json* error = Find(body, "error")) f.error = *error;
  const Json* choice = FirstChoice(body);
  if (choice == nullptr) return f;
  if (const Json* message = Find(*choice, "message")) {
    AppendText(Find(*message, "content"), &f);
    if (const Json* calls = Find(*message, "tool_calls"); calls && !calls->empty()) {
      ++f.content_chunks;
    }
  }
  AppendText(Find(*choice, "text"), &f);
  AddLogprobs(Find(*choice, "logprobs"), &f);
  if (const Json* fr = Find(*choice, "finish_reason"); fr && fr->is_string()) {
    f.finish_reason = fr->get<std::string>();
  }
  return f;
}

Expected<nlohmann::json> ModelInfo(const std::string& url, const std::string& api_key) {
  boost::asio::io_context io;
  UpstreamOptions options;
  options.base_url = url;
  ASSIGN_OR_RETURN(auto client, UpstreamClient::Create(io.get_executor(), options));
  UpstreamRequest req;
  req.method = "GET";
  req.path = "/v1/models";
  if (!api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + api_key});
  ASSIGN_OR_RETURN(auto answer, FetchBlocking(*client, io, std::move(req)));
  Json j = Json::parse(answer.second, nullptr, false);
  if (answer.first != 200 || !j.is_object() || !j.contains("data") || !j["data"].is_array() ||
      j["data"].empty() || !j["data"][0].is_object()) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("{} /v1/models gave no model (HTTP {})", url, answer.first));
  }
  return j["data"][0];
}

Expected<std::string> DiscoverModel(const std::string& url, const std::string& api_key) {
  ASSIGN_OR_RETURN(Json model, ModelInfo(url, api_key));
  std::string id = (model.contains("id") && model["id"].is_string() ? model["id"].get<std::string>()
                                                                    : std::string());
  if (id.empty()) {
    return Status(StatusCode::kUnavailable, fmt::format("{} /v1/models lists no model id", url));
  }
  return id;
}

}  // namespace brisk::http
