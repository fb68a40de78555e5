// Tensor storage, dtype facts, half/bfloat16 conversion, casting and .npy I/O.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "frontend/onnx_tensor.h"
#include "support/error.h"
#include "support/file_util.h"
#include "tessera/tensor.h"
#include "unit/error_message.h"

namespace tessera {
namespace {

TEST(DType, SizesAndNamesMatchOnnxCodes) {
  EXPECT_EQ(static_cast<int>(DType::F32), 1);
  EXPECT_EQ(static_cast<int>(DType::BF16), 16);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(dtype_size(DType::Bool), 1u);
  EXPECT_EQ(dtype_name(DType::U32), "u32");
  EXPECT_EQ(dtype_from_name("bf16"), DType::BF16);
  EXPECT_EQ(dtype_from_name("float"), DType::F32);
  EXPECT_FALSE(dtype_supported(17));  // float8e4m3fn
  EXPECT_TRUE(is_float(DType::F16));
  EXPECT_FALSE(is_float(DType::I8));
  EXPECT_TRUE(is_integer(DType::U64));
}

TEST(Half, ExactValuesRoundTrip) {
  // Values exactly representable in binary16, with their bit patterns.
  struct {
    float f;
    uint16_t bits;
  } cases[] = {{1.0f, 0x3c00}, {-2.0f, 0xc000}, {0.5f, 0x3800}, {65504.0f, 0x7bff},
               {0.0f, 0x0000}, {5.960464477539063e-08f, 0x0001}, {6.103515625e-05f, 0x0400}};
  for (auto c : cases) {
    Half h(c.f);
    EXPECT_EQ(h.bits, c.bits) << c.f;
    EXPECT_EQ(static_cast<float>(h), c.f);
  }
  EXPECT_EQ(Half(1e6f).bits, 0x7c00);          // overflow -> inf
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
  EXPECT_EQ(Half(1.0f + 1.0f / 2048).bits, 0x3c00);  // tie rounds to even
  EXPECT_EQ(Half(1.0f + 3.0f / 2048).bits, 0x3c02);
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(BFloat16(3.0f)), 3.0f);
  EXPECT_EQ(BFloat16(1.0f + 1.0f / 256).bits, 0x3f80);  // tie -> even
  EXPECT_EQ(BFloat16(1.0f + 3.0f / 256).bits, 0x3f82);
}

TEST(Tensor, ShapesStridesAndReshape) {
  Tensor t(DType::F32, {2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_EQ(strides_of(t.dims()), (Dims{12, 4, 1}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  Tensor r = t.reshaped({6, 4});
  EXPECT_EQ(r.raw(), t.raw());  // shares the buffer
  EXPECT_THROW(t.reshaped({5, 5}), Error);
  EXPECT_THROW(Tensor(DType::F32, {-1, 2}), Error);
  EXPECT_EQ(dims_to_string({1, 3, 224, 224}), "1x3x224x224");
  EXPECT_EQ(dims_to_string({}), "scalar");
  EXPECT_EQ(Tensor::scalar<float>(2.5f).numel(), 1);
}

TEST(Tensor, CastFollowsConversionRules) {
  Tensor f = Tensor::from<float>({5}, {1.7f, -1.7f, 0.0f, 300.0f, NAN});
  Tensor i = f.cast(DType::I32);
  EXPECT_EQ(i.to_int_vector(), (std::vector<int64_t>{1, -1, 0, 300, 0}));
  Tensor u8 = f.cast(DType::U8);
  EXPECT_EQ(u8.data<uint8_t>()[3], 255);  // saturates
  Tensor b = f.cast(DType::Bool);
  EXPECT_EQ(b.to_int_vector(), (std::vector<int64_t>{1, 1, 0, 1, 1}));
  Tensor h = Tensor::from<float>({1}, {0.1f}).cast(DType::F16);
  EXPECT_EQ(h.data<Half>()[0].bits, 0x2e66);
}

TEST(Tensor, NpyRoundTrip) {
  auto dir = std::filesystem::temp_directory_path();
  for (DType dt : {DType::F32, DType::I64, DType::U8, DType::Bool, DType::F16}) {
    Tensor t = Tensor::from<float>({2, 3}, {1, 0, 3, 4, 0, 6}).cast(dt);
    std::string path = (dir / ("tessera_npy_test_" + std::string(dtype_name(dt)) + ".npy")).string();
    write_npy(path, t);
    Tensor back = read_npy(path);
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_EQ(back.dims(), t.dims());
    EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.nbytes()), 0);
    std::filesystem::remove(path);
  }
  Tensor scalar = Tensor::scalar<double>(3.25);
  std::string path = (dir / "tessera_npy_scalar.npy").string();
  write_npy(path, scalar);
  EXPECT_EQ(read_npy(path).rank(), 0);
  EXPECT_EQ(read_npy(path).get_double(0), 3.25);
  std::filesystem::remove(path);
}

TEST(Tensor, NpyHeaderDimsAreChecked) {
  auto path = (std::filesystem::temp_directory_path() / "tessera_npy_bad_dims.npy").string();
  // A file write_npy made, its header's shape replaced by `shape` (the
  // header's padding keeps its length) and its data cut to `bytes`.
  write_npy(path, Tensor(DType::F32, {1, 1}));
  const std::string good = read_file(path);
  auto error_of = [&](const std::string& shape, size_t bytes) {
    std::string header = good.substr(0, good.size() - 4);  // without the one f32
    const std::string old = "(1, 1)", now = "(" + shape + ")";
    header.replace(header.find(old), old.size(), now);
    const size_t newline = header.size() - 1;  // the header ends with '\n' after its padding
    if (now.size() > old.size()) header.erase(newline - (now.size() - old.size()), now.size() - old.size());
    else header.insert(newline, old.size() - now.size(), ' ');
    write_file(path, header + std::string(bytes, '\0'));
    return testing::error_of([&] { read_npy(path); });
  };
  // A negative dim used to be read as its digits (-224 as 224).
  std::string err = error_of("1, 3, -224, 224", 4 * 3 * 224 * 224);
  EXPECT_NE(err.find(path + ": .npy shape (1, 3, -224, 224) has dimension '-224', which is not a non-negative integer"),
            std::string::npos)
      << err;
  EXPECT_NE(error_of("2, x", 16).find("dimension 'x'"), std::string::npos);
  EXPECT_NE(error_of("2,, 3", 24).find("dimension ''"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999,", 16).find("dimension '99999999999999999999'"), std::string::npos);
  // A header asking for more than the file holds fails before allocating.
  err = error_of("1099511627776, 1024", 16);
  EXPECT_NE(err.find(path + ": shape 1099511627776x1024 has too many elements"), std::string::npos) << err;
  err = error_of("1000000000,", 16);
  EXPECT_NE(err.find(path + ": .npy data is truncated (16 of 4000000000 bytes"), std::string::npos) << err;
  // Well-formed shapes still read: rank 1 with its trailing comma, rank 0.
  EXPECT_EQ(error_of("4,", 16), "");
  EXPECT_EQ(error_of("", 4), "");
  EXPECT_EQ(error_of(" 2 , 2 ", 16), "");
  std::filesystem::remove(path);
}

TEST(Tensor, ProtoFileRoundTrip) {
  auto path = (std::filesystem::temp_directory_path() / "tessera_pb_test.pb").string();
  Tensor t = Tensor::from<int64_t>({2, 2}, {1, -2, 3, 1LL << 40});
  write_tensor_pb(path, t, "t");
  Tensor back = read_tensor_pb(path);
  EXPECT_EQ(back.to_int_vector(), t.to_int_vector());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessera
