// Links every fine-grained conclave target (see CMakeLists.txt); does nothing.
int main() {
  return 0;
}
