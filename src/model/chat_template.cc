#include "model/chat_template.h"

#include "jinja/interpreter.h"
#include "jinja/parser.h"
#include "jinja/value.h"

namespace brisk {
namespace {

Expected<std::string> RenderValue(const jinja::Template& tmpl, const ChatTemplateOptions& opts,
                                  const jinja::Value& context) {
  jinja::Interpreter interp(opts);
  return interp.Render(tmpl, context);
}

}  // namespace

Expected<ChatTemplate> ChatTemplate::Parse(std::string_view source) {
  auto tmpl = jinja::ParseTemplate(source);
  if (!tmpl.ok()) return tmpl.status().WithContext("chat template");
  return ChatTemplate(std::shared_ptr<const jinja::Template>(std::move(tmpl).value()),
                      std::make_shared<const std::string>(source));
}

Expected<std::string> ChatTemplate::Render(std::span<const ChatMessage> messages,
                                           bool add_generation_prompt, const std::string& bos_token,
                                           const std::string& eos_token) const {
  using jinja::DictData;
  using jinja::Value;
  std::vector<Value> msgs;
  msgs.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    DictData d;
    d.items = {{Value("role"), Value(m.role)}, {Value("content"), Value(m.content)}};
    msgs.push_back(Value::Dict(std::move(d)));
  }
  DictData ctx;
  ctx.items = {
      {Value("messages"), Value::List(std::move(msgs))},
      {Value("tools"), Value::None()},
      {Value("documents"), Value::None()},
      {Value("add_generation_prompt"), Value(add_generation_prompt)},
      {Value("bos_token"), Value(bos_token)},
      {Value("eos_token"), Value(eos_token)},
  };
  return RenderValue(*tmpl_, options_, Value::Dict(std::move(ctx)));
}

Expected<std::string> ChatTemplate::RenderJson(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) return InvalidArgument("chat template context must be a JSON object");
  ASSIGN_OR_RETURN(jinja::Value ctx, jinja::Value::FromJson(context));
  return RenderValue(*tmpl_, options_, ctx);
}

Expected<std::string> ChatTemplate::RenderJson(const nlohmann::json& context) const {
  if (!context.is_object()) return InvalidArgument("chat template context must be a JSON object");
  ASSIGN_OR_RETURN(jinja::Value ctx, jinja::Value::FromJson(context));
  return RenderValue(*tmpl_, options_, ctx);
}

}  // namespace brisk
