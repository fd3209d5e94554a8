#include "grammar/regex_grammar.h"

#include "grammar/regex_parser.h"

namespace brisk {

Expected<std::shared_ptr<const CfgGrammar>> CompileRegex(std::string_view pattern) {
  return regex_parser::RegexParser<CfgBuilder>(pattern, {}).Run();
}

}  // namespace brisk
