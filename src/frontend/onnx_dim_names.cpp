// Walks the protobuf wire format of ModelProto down to GraphProto's input and
// output fields, parsing just those ValueInfoProto messages.
#include "frontend/onnx_dim_names.h"

#include <fcntl.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>

namespace tessera {

namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::internal::WireFormatLite;

constexpr int kModelGraph = 7;    // ModelProto.graph
constexpr int kGraphInput = 11;   // GraphProto.input
constexpr int kGraphOutput = 12;  // GraphProto.output

void add_value_info(const std::string& bytes, std::map<std::string, std::vector<std::string>>& out) {
  onnx::ValueInfoProto vi;
  if (!vi.ParseFromString(bytes) || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
  std::vector<std::string> names;
  bool any = false;
  for (const auto& d : vi.type().tensor_type().shape().dim()) {
    names.push_back(d.has_dim_param() ? d.dim_param() : "");
    any = any || d.has_dim_param();
  }
  if (any) out[vi.name()] = std::move(names);
}

// Reads the GraphProto in the current limit; false on malformed input.
bool read_graph(CodedInputStream& in, std::map<std::string, std::vector<std::string>>& out) {
  while (uint32_t tag = in.ReadTag()) {
    int field = WireFormatLite::GetTagFieldNumber(tag);
    bool delimited = WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if ((field == kGraphInput || field == kGraphOutput) && delimited) {
      std::string bytes;
      if (!WireFormatLite::ReadBytes(&in, &bytes)) return false;
      add_value_info(bytes, out);
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::map<std::string, std::vector<std::string>> onnx_dim_names(const std::string& path) {
  std::map<std::string, std::vector<std::string>> out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  {
    google::protobuf::io::FileInputStream file(fd);
    CodedInputStream in(&file);
    while (uint32_t tag = in.ReadTag()) {
      if (WireFormatLite::GetTagFieldNumber(tag) == kModelGraph &&
          WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
        uint32_t length = 0;
        if (!in.ReadVarint32(&length) || length > 0x7fffffffu) break;
        CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
        if (!read_graph(in, out)) out.clear();
        in.PopLimit(limit);
        break;
      }
      if (!WireFormatLite::SkipField(&in, tag)) break;
    }
  }
  ::close(fd);
  return out;
}

}  // namespace tessera
