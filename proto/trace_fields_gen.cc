// Writes libtracer/core/trace_fields.h: the field numbers of every message of
// trace.proto, read from the generated descriptor, as plain constants. The
// injected library writes the wire format by hand and links no protobuf
// (docs/design.md section 3); this is how it gets its field numbers without
// copying them by hand. Runs at build time only.
//
//   trace_fields_gen OUTPUT.h
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "proto/trace.pb.h"

namespace {

namespace gp = google::protobuf;

// "correlation_delta" -> "kCorrelationDelta" (Google style constant).
std::string ConstantName(const std::string& field) {
  std::string out = "k";
  bool upper = true;
  for (char c : field) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

// One struct of constants per message; every field also goes into *table.
void WriteMessage(const gp::Descriptor* m, const std::string& name, std::ostream& out,
                  std::ostream& table) {
  out << "struct " << name << " {\n";
  for (int i = 0; i < m->field_count(); ++i) {
    const gp::FieldDescriptor* f = m->field(i);
    out << "  static constexpr uint32_t " << ConstantName(f->name()) << " = " << f->number()
        << ";\n";
    table << "    {\"" << m->full_name() << "\", \"" << f->name() << "\", " << name
          << "::" << ConstantName(f->name()) << "},\n";
  }
  out << "};\n\n";
  for (int i = 0; i < m->nested_type_count(); ++i) {
    WriteMessage(m->nested_type(i), name + "_" + m->nested_type(i)->name(), out, table);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.h\n", argv[0]);
    return 2;
  }
  const gp::FileDescriptor* file = tracer::proto::Chunk::descriptor()->file();
  std::ostringstream out;
  out << "// Generated from " << file->name() << " by proto/trace_fields_gen.cc; do not edit.\n"
      << "// Field numbers of every message, for the hand-written wire encoder.\n"
      << "#pragma once\n\n#include <cstdint>\n\nnamespace tracer::fields {\n\n";
  std::ostringstream table;
  for (int i = 0; i < file->message_type_count(); ++i) {
    WriteMessage(file->message_type(i), file->message_type(i)->name(), out, table);
  }
  // For the test that checks the header against the descriptor.
  out << "struct FieldNumber {\n  const char* message;\n  const char* field;\n"
      << "  uint32_t number;\n};\n\ninline constexpr FieldNumber kAllFieldNumbers[] = {\n"
      << table.str() << "};\n\n}  // namespace tracer::fields\n";
  std::ofstream f(argv[1], std::ios::binary | std::ios::trunc);
  f << out.str();
  return f ? 0 : 1;
}
