// libFuzzer target (BRISK_FUZZ=ON) for the grammar parsers and the Earley
// recognizer: byte 0 picks regex / GBNF / choice list (JSON), the bytes up
// to the next NUL are the constraint, the rest is text fed to the matcher.
// A compile never crashes or throws: it gives a grammar or an
// InvalidArgument with a message. On a grammar, Advance() either consumes
// the byte (one more set) or leaves the state exactly as it was, Rollback()
// returns to an earlier state, and a copy behaves like the original.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "grammar/cfg_matcher.h"
#include "grammar/constraint.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using brisk::ConstraintSpec;
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = rest.find('\0');
  const std::string_view text = rest.substr(0, nul);
  const std::string_view input =
      nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1, 4096);
  ConstraintSpec spec;
  static constexpr ConstraintSpec::Kind kKinds[] = {
      ConstraintSpec::Kind::kRegex, ConstraintSpec::Kind::kGrammar, ConstraintSpec::Kind::kChoice};
  spec.kind = kKinds[data[0] % 3];
  spec.schema = std::string(text);
  auto compiled = brisk::CompileConstraint(spec);
  if (!compiled.ok()) {
    Check(compiled.status().code() == brisk::StatusCode::kInvalidArgument);
    Check(!compiled.status().message().empty());
    return 0;
  }
  Check((*compiled)->is_cfg());
  brisk::CfgMatcher m((*compiled)->cfg);
  const size_t start_items = m.num_items();
  const bool start_end = m.CanEnd();
  size_t half_sets = 0, half_items = 0;
  for (size_t i = 0; i < input.size(); ++i) {
    const size_t sets = m.num_sets(), items = m.num_items();
    if (m.Advance(static_cast<uint8_t>(input[i]))) {
      Check(m.num_sets() == sets + 1);
    } else {
      Check(m.num_sets() == sets && m.num_items() == items);
    }
    if (i == input.size() / 2) half_sets = m.num_sets(), half_items = m.num_items();
  }
  brisk::CfgMatcher copy;
  copy.CopyFrom(m);
  Check(copy.CanEnd() == m.CanEnd() && copy.Finished() == m.Finished());
  if (half_sets > 0) {
    m.Rollback(half_sets);
    Check(m.num_items() == half_items);
  }
  m.Rollback(1);
  Check(m.num_items() == start_items && m.CanEnd() == start_end);
  return 0;
}
