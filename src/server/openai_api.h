// The OpenAI HTTP API's schema layer for /v1/chat/completions,
// /v1/completions and /v1/models, in two halves:
//   openai_request.h   request bodies in, validated ApiRequest or ApiError out;
//   openai_response.h  plain data in, response bodies and SSE events out.
// Pure functions, no I/O, no engine calls. This header includes both.
#pragma once

#include "server/openai_request.h"   // IWYU pragma: export
#include "server/openai_response.h"  // IWYU pragma: export
