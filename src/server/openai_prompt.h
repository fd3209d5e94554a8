// The text a request asks the model to continue: chat "messages" and the
// completions "prompt", parsed and checked as openai_request.h describes.
// Internal to server/ (used by openai_request.cc).
#pragma once

#include "server/openai_fields.h"
#include "server/openai_request.h"

namespace brisk::api::fields {

// "messages": a non-empty array of message objects, rebuilt into `out` as
// ApiRequest::messages describes (content always a string, only known keys).
// Unknown keys in messages and content parts go to UnknownKey(.., ignored).
Problem ParseMessages(const Json& v, Json* out, std::vector<std::string>* ignored = nullptr);

// "prompt": fills req->prompts or req->prompt_tokens.
Problem ParsePrompt(const Json& v, ApiRequest* req);

}  // namespace brisk::api::fields
