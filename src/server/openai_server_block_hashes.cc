// POST /kv/block_hashes/v1/...: a prompt's KV event block keys, for a
// gateway's precise prefix routing (gateway/kv_block_index.h).
#include <fmt/format.h>

#include <boost/asio/post.hpp>

#include "server/openai_server.h"

namespace brisk {

void OpenAiServer::BlockHashes(int endpoint, http::Request&& req,
                               std::shared_ptr<http::Responder> res) {
  if (!block_hasher_) {
    return http::SendOpenAiError(
        *res, http::MakeOpenAiError(404, "invalid_request_error",
                                    "KV events are off on this engine (cache.kv_events.enabled)",
                                    "kv_events_off"));
  }
  // Rendering a chat prompt is real work: never on the I/O thread.
  auto strand = executors_->NewStrand(req.body.size());
  boost::asio::post(strand, [this, endpoint, req = std::move(req), res = std::move(res)] {
    const auto ep = endpoint == 1 ? api::Endpoint::kCompletions : api::Endpoint::kChatCompletions;
    // The request is prepared as a generation would be (its tenant, chat
    // template, tools, prompt cap), so its keys are the ones the engine's
    // prefix cache would publish for it.
    auto prepared = PrepareRequest(prep_, ep, req, Clock::now());
    if (auto* e = std::get_if<api::ApiError>(&prepared)) return http::SendOpenAiError(*res, *e);
    const PreparedRequest& pr = std::get<PreparedRequest>(prepared);
    nlohmann::json hashes = nlohmann::json::array();
    int64_t prompt_tokens = 0;
    const int block = config_.scheduler.block_size;
    if (!pr.prompts.empty() && block > 0) {
      const GenerationRequest& g = pr.prompts.front();
      const std::span<const int32_t> tokens(g.prompt);
      prompt_tokens = static_cast<int64_t>(tokens.size());
      ExternalBlockHash parent = block_hasher_->none_hash();
      for (size_t at = 0; at + static_cast<size_t>(block) <= tokens.size();
           at += static_cast<size_t>(block)) {
        // vLLM's extra keys: the salt on the first block only.
        parent = block_hasher_->Chain(parent, tokens.subspan(at, static_cast<size_t>(block)),
                                      at == 0 ? std::string_view(g.cache_salt) : "");
        hashes.push_back(fmt::format("{:016x}", BlockKeyOf(parent)));
      }
    }
    nlohmann::json body = {{"object", "kv.block_hashes"},
                           {"block_size", block},
                           {"prompt_tokens", prompt_tokens},
                           {"block_hashes", std::move(hashes)}};
    res->Send(200, {{"Content-Type", "application/json"}}, body.dump());
  });
}

}  // namespace brisk
