// brisk: one binary, subcommands.
#include <cstdio>

int main(int argc, char** argv) {
  std::puts("brisk");
  return 0;
}
