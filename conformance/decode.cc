#include "conformance/decode.h"

#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "conformance/frame.h"
#include "google/protobuf/text_format.h"
#include "spec/conformance.pb.h"

namespace kvspec {
namespace conformance {
namespace {

// Whether `message` or any message inside it holds fields its schema does
// not have: a frame of the other side, or of a newer schema.
bool HasUnknownFields(const google::protobuf::Message& message) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  if (!reflection->GetUnknownFields(message).empty()) return true;
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        if (HasUnknownFields(reflection->GetRepeatedMessage(message, field, i))) return true;
      }
    } else if (HasUnknownFields(reflection->GetMessage(message, field))) {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> FramesAsText(const std::string& bytes, Side side,
                                         size_t max_frame_bytes) {
  FrameDecoder decoder(max_frame_bytes);
  decoder.Feed(bytes);
  std::string text, frame;
  size_t offset = 0;
  for (int n = 1;; ++n) {
    const FrameDecoder::State state = decoder.Next(frame);
    if (state == FrameDecoder::State::kTooLarge) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "frame %d at byte %d declares %d bytes, over the cap of %d", n, offset,
          decoder.declared_length(), max_frame_bytes));
    }
    if (state == FrameDecoder::State::kNeedMore) {
      if (decoder.buffered() != 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "frame %d at byte %d is truncated: %d bytes left, fewer than its "
            "length prefix says",
            n, offset, decoder.buffered()));
      }
      if (n == 1) return absl::InvalidArgumentError("no frame: the input is empty");
      return text;
    }
    std::unique_ptr<google::protobuf::Message> message;
    bool set = false;
    if (side == Side::kRunner) {
      auto m = std::make_unique<v1::RunnerMessage>();
      const bool ok = m->ParseFromString(frame);
      set = ok && m->message_case() != v1::RunnerMessage::MESSAGE_NOT_SET;
      if (ok) message = std::move(m);
    } else {
      auto m = std::make_unique<v1::PortMessage>();
      const bool ok = m->ParseFromString(frame);
      set = ok && m->message_case() != v1::PortMessage::MESSAGE_NOT_SET;
      if (ok) message = std::move(m);
    }
    const char* type = side == Side::kRunner ? "RunnerMessage" : "PortMessage";
    if (message == nullptr || !set) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "frame %d at byte %d (%d bytes) is not a %s%s", n, offset, frame.size(),
          type, message == nullptr ? "" : " with a message set"));
    }
    if (HasUnknownFields(*message)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "frame %d at byte %d (%d bytes) has fields a %s does not: it is the "
          "other side's (try --decode_as=%s) or of a newer schema",
          n, offset, frame.size(), type, side == Side::kRunner ? "port" : "runner"));
    }
    std::string body;
    google::protobuf::TextFormat::Printer printer;
    printer.PrintToString(*message, &body);
    text += absl::StrFormat("# frame %d: %d bytes, a %s\n%s\n", n, frame.size(), type, body);
    offset += 4 + frame.size();
  }
}

}  // namespace conformance
}  // namespace kvspec
