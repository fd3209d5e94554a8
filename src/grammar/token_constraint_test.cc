// Both constraint kinds (a JSON schema and a regex / GBNF grammar) driven
// through TokenConstraint alone, as the output processor drives them: masks
// against a brute-force walk of the vocabulary, advancing, ending,
// speculative Save() / Restore(), and clones that go their own way.
#include "grammar/token_constraint.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/constraint.h"

namespace brisk {
namespace {

// Every printable ASCII byte, some longer pieces, an end token and a
// control token.
TokenVocab SmallVocab() {
  TokenVocab v;
  auto add = [&](std::string piece, TokenVocab::Kind kind) {
    v.pieces.push_back(std::move(piece));
    v.kinds.push_back(kind);
  };
  for (char c = ' '; c <= '~'; ++c) add(std::string(1, c), TokenVocab::Kind::kText);
  for (const char* p : {"{\"", "\":", "\"}", "ab", "abc", "12", "-3", "true", "fal", "se", "yes",
                        "no", "\xc3\xa9", "\"a\":1", "0}"})
    add(p, TokenVocab::Kind::kText);
  add("", TokenVocab::Kind::kEog);
  add("", TokenVocab::Kind::kControl);
  return v;
}

std::shared_ptr<const CompiledConstraint> Compile(ConstraintSpec::Kind kind, const char* text) {
  auto c = CompileConstraint({kind, text});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

// The mask by brute force, through the interface: each token's bytes from
// a mark, then back to it.
TokenBitmask Reference(const TokenVocab& vocab, TokenConstraint& c) {
  TokenBitmask out((static_cast<size_t>(vocab.size()) + 63) / 64, 0);
  for (int32_t id = 0; id < vocab.size(); ++id) {
    bool allowed = false;
    if (vocab.kinds[id] == TokenVocab::Kind::kEog) {
      allowed = c.CanEnd();
    } else if (vocab.kinds[id] == TokenVocab::Kind::kText) {
      c.Save();
      allowed = c.AdvanceBytes(vocab.pieces[id]);
      c.Restore();
    }
    if (allowed) out[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
  }
  return out;
}

struct Case {
  ConstraintSpec::Kind kind;
  const char* text;
  std::vector<std::string>
      tokens;  // an accepted text, in vocabulary pieces; only the whole can end
};

const Case kCases[] = {
    {ConstraintSpec::Kind::kJsonSchema,
     R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],
        "additionalProperties":false})",
     {"{\"", "a", "\":", "-3", "0}"}},
    {ConstraintSpec::Kind::kRegex, R"((yes|no)-\d{2}[a-c\u00e9])", {"yes", "-", "12", "\xc3\xa9"}},
    {ConstraintSpec::Kind::kGrammar,
     "root ::= \"[\" item (\",\" item)* \"]\"\nitem ::= \"ab\" | [0-9]+",
     {"[", "ab", ",", "12", "]"}},
};

TEST(TokenConstraintTest, MasksMatchTheBruteForceWalkAtEveryStep) {
  const TokenVocab vocab = SmallVocab();
  const auto trie = TokenTrie::Build(vocab);
  TokenMaskers maskers(trie.get());
  for (const Case& k : kCases) {
    SCOPED_TRACE(k.text);
    auto compiled = Compile(k.kind, k.text);
    ASSERT_TRUE(compiled);
    std::unique_ptr<TokenConstraint> c = MakeTokenConstraint(compiled);
    for (size_t step = 0; step <= k.tokens.size(); ++step) {
      TokenBitmask mask;
      c->FillMask(maskers, &mask);
      EXPECT_EQ(mask, Reference(vocab, *c)) << "step " << step;
      if (step == k.tokens.size()) break;
      EXPECT_FALSE(c->CanEnd()) << "step " << step;
      ASSERT_TRUE(c->AdvanceBytes(k.tokens[step])) << k.tokens[step];
    }
    EXPECT_TRUE(c->CanEnd());
    EXPECT_FALSE(c->AdvanceBytes("~"));  // rejected: no change
    EXPECT_TRUE(c->CanEnd());
  }
}

TEST(TokenConstraintTest, RestoreUndoesADraftAndClonesAreIndependent) {
  for (const Case& k : kCases) {
    SCOPED_TRACE(k.text);
    auto compiled = Compile(k.kind, k.text);
    ASSERT_TRUE(compiled);
    std::unique_ptr<TokenConstraint> c = MakeTokenConstraint(compiled);
    ASSERT_TRUE(c->AdvanceBytes(k.tokens[0]));
    // A draft of the rest is walked from a mark, then undone.
    c->Save();
    for (size_t i = 1; i < k.tokens.size(); ++i) ASSERT_TRUE(c->AdvanceBytes(k.tokens[i]));
    EXPECT_TRUE(c->CanEnd());
    c->Restore();
    EXPECT_FALSE(c->CanEnd());
    EXPECT_FALSE(c->AdvanceBytes(k.tokens[0] + k.tokens[0] + "~"));
    // A clone takes the rest; the original is where it was and takes it too.
    std::unique_ptr<TokenConstraint> fork = c->Clone();
    for (size_t i = 1; i < k.tokens.size(); ++i) ASSERT_TRUE(fork->AdvanceBytes(k.tokens[i]));
    EXPECT_TRUE(fork->CanEnd());
    EXPECT_FALSE(c->CanEnd());
    for (size_t i = 1; i < k.tokens.size(); ++i) ASSERT_TRUE(c->AdvanceBytes(k.tokens[i]));
    EXPECT_TRUE(c->CanEnd());
  }
}

}  // namespace
}  // namespace brisk
