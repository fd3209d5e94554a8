#include "server/reasoning.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace brisk {
namespace {

const ReasoningMarkers kThink{"<think>", "</think>"};

// The parts of `pieces` fed one by one, then flushed.
ReasoningSplitter::Parts Split(const std::vector<std::string>& pieces, ReasoningStart start) {
  ReasoningSplitter s(kThink, start);
  ReasoningSplitter::Parts p;
  for (const std::string& piece : pieces) s.Push(piece, &p);
  s.Flush(&p);
  return p;
}

TEST(ReasoningMarkersTest, AutoTakesThinkMarkersFromTheTemplate) {
  EXPECT_EQ(ResolveReasoningMarkers("auto", {}, "{{ '<think>\\n' }}...</think>"), kThink);
  EXPECT_FALSE(ResolveReasoningMarkers("auto", {}, "{{ messages }}").enabled());
  EXPECT_FALSE(ResolveReasoningMarkers("off", {}, "<think></think>").enabled());
  const ReasoningMarkers mine{"<reason>", "</reason>"};
  EXPECT_EQ(ResolveReasoningMarkers("markers", mine, ""), mine);
}

TEST(ReasoningMarkersTest, ThePromptsEndSaysWhereTheOutputStarts) {
  EXPECT_EQ(PromptReasoningStart("<|im_start|>assistant\n", kThink), ReasoningStart::kOpen);
  EXPECT_EQ(PromptReasoningStart("<｜Assistant｜><think>\n", kThink), ReasoningStart::kInside);
  EXPECT_EQ(PromptReasoningStart("assistant\n<think>\n\n</think>\n\n", kThink),
            ReasoningStart::kClosed);
  EXPECT_EQ(PromptReasoningStart("<think>", ReasoningMarkers{}), ReasoningStart::kClosed);
}

TEST(ReasoningSplitterTest, ThinkingThenAnswerWhateverThePieces) {
  const std::string whole = "<think>\nThe user wants a color.\n</think>\n\nBlue.";
  // Every split of the text into two pieces, and one byte at a time.
  for (size_t cut = 0; cut <= whole.size(); ++cut) {
    auto p = Split({whole.substr(0, cut), whole.substr(cut)}, ReasoningStart::kOpen);
    EXPECT_EQ(p.reasoning, "The user wants a color.") << cut;
    EXPECT_EQ(p.content, "Blue.") << cut;
  }
  std::vector<std::string> bytes;
  for (char c : whole) bytes.emplace_back(1, c);
  auto p = Split(bytes, ReasoningStart::kOpen);
  EXPECT_EQ(p.reasoning, "The user wants a color.");
  EXPECT_EQ(p.content, "Blue.");
}

TEST(ReasoningSplitterTest, AnAnswerWithoutThinkingIsAllContent) {
  auto p = Split({"Blue", " is <think> a color"}, ReasoningStart::kOpen);
  EXPECT_EQ(p.reasoning, "");
  EXPECT_EQ(p.content, "Blue is <think> a color");
  p = Split({"<thi", "s is no marker"}, ReasoningStart::kOpen);
  EXPECT_EQ(p.content, "<this is no marker");
  p = Split({"<think>x</think>y"}, ReasoningStart::kClosed);  // the template closed the block
  EXPECT_EQ(p.content, "<think>x</think>y");
}

TEST(ReasoningSplitterTest, InsideTheBlockFromTheFirstByte) {
  auto p = Split({"Hmm, ", "red or ", "blue.\n</th", "ink>\n\nRed."}, ReasoningStart::kInside);
  EXPECT_EQ(p.reasoning, "Hmm, red or blue.");
  EXPECT_EQ(p.content, "Red.");
}

TEST(ReasoningSplitterTest, CutOffWhileThinkingIsAllReasoning) {
  auto p = Split({"<think>\nStill ", "thinking </thi"}, ReasoningStart::kOpen);
  EXPECT_EQ(p.reasoning, "Still thinking </thi");
  EXPECT_EQ(p.content, "");
}

TEST(ReasoningSplitterTest, ReasoningGoesOutAsItComesHoldingOnlyAMarkersStart) {
  ReasoningSplitter s(kThink, ReasoningStart::kInside);
  ReasoningSplitter::Parts p;
  s.Push("one two", &p);
  EXPECT_EQ(p.reasoning, "one two");
  s.Push(" three </", &p);  // the space and "</" wait
  EXPECT_EQ(p.reasoning, "one two three");
  s.Push("b> four", &p);
  EXPECT_EQ(p.reasoning, "one two three </b> four");
  EXPECT_FALSE(s.in_answer());
  s.EndReasoning(&p);  // a constraint's trigger at the end marker fired
  EXPECT_TRUE(s.in_answer());
  s.Push("\n{\"a\":1}", &p);
  EXPECT_EQ(p.content, "{\"a\":1}");
}

TEST(ReasoningSplitterTest, OffIsAllAnswer) {
  ReasoningSplitter s;
  ReasoningSplitter::Parts p;
  s.Push("<think>x</think>", &p);
  s.Flush(&p);
  EXPECT_EQ(p.content, "<think>x</think>");
  EXPECT_TRUE(s.in_answer());
}

}  // namespace
}  // namespace brisk
