#include "data/image_codec.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>

#include "data/jpeg_region.h"

namespace ic {
namespace {

struct TjHandleCloser {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjHandleCloser>;

// A new decompressor for every image (creating one costs well under a microsecond): libjpeg
// keeps Huffman and quantization tables in the decompressor from one image to the next, so a
// reused one decodes a stream that leaves a table undefined with an earlier image's table (and
// TurboJPEG 2.1 leaves a failed one mid-header, "Improper call to JPEG library in state 201").
// The compressor has no such memory and stays one per thread (handles are not thread-safe).
TjHandle new_decompressor() { return TjHandle(tjInitDecompress()); }
tjhandle thread_compressor() {
  thread_local TjHandle handle(tjInitCompress());
  return handle.get();
}

struct TjBufferFree {
  void operator()(unsigned char* buffer) const { tjFree(buffer); }
};

const unsigned char* as_bytes(std::string_view bytes) {
  return reinterpret_cast<const unsigned char*>(bytes.data());
}

// Whether the JPEG carries an Adobe APP14 marker before its first scan. Adobe applications
// store CMYK inverted (0 = full ink), and libjpeg reports that as saw_Adobe_marker; the
// TurboJPEG API does not expose it, so we walk the marker segments ourselves.
bool has_adobe_marker(std::string_view bytes) {
  size_t pos = 2;  // after SOI
  while (pos + 4 <= bytes.size()) {
    if (static_cast<uint8_t>(bytes[pos]) != 0xFF) return false;
    const uint8_t marker = static_cast<uint8_t>(bytes[pos + 1]);
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return false;  // SOS or EOI: header is over
    const size_t length =
        (static_cast<uint8_t>(bytes[pos + 2]) << 8) | static_cast<uint8_t>(bytes[pos + 3]);
    if (marker == 0xEE && length >= 7 && pos + 4 + 5 <= bytes.size() &&
        bytes.substr(pos + 4, 5) == "Adobe") {
      return true;
    }
    pos += 2 + length;
  }
  return false;
}

// What tjDecompress2's return code `rc` means for the image. A warning about damaged data
// (a truncated file, a bad Huffman code: libjpeg fills the rest with grey) is an error, as in
// TensorFlow's decode_jpeg without try_recover_truncated; other warnings are harmless
// (TensorFlow decodes such files too). TurboJPEG keeps only the last warning's text, and a
// harmless one ("extraneous bytes") may follow a damaging one, so a stream that warned at all
// is read once more through libjpeg, which shows each warning: rare, and cheap at 1/8 scale.
Status decode_result(tjhandle handle, int rc, std::string_view bytes, const char* what) {
  if (rc == 0) return Status();
  if (tjGetErrorCode(handle) != TJERR_WARNING) {
    return error(what, " decode failed: ", tjGetErrorStr2(handle));
  }
  std::string damage;
  if (!jpeg_region::stream_is_intact(bytes, &damage)) {
    return error(what, " decode failed, the data is damaged: ", damage);
  }
  return Status();
}

// tjDecompress2 is given the output size, not the scale: it takes the largest of its scaling
// factors (2/1, 15/8, ..., 1/8) whose output fits. For an image under about 16 pixels a side
// a larger factor can give the same size as 1/scale_denom (a 5x5 image is 2x2 at both 3/8 and
// 1/4), and TurboJPEG would decode at that factor instead: other pixels than the region decode
// (jpeg_region.h), which sets the scale itself. Whether TurboJPEG takes exactly 1/scale_denom
// for an output of `scaled` (the header's size at 1/scale_denom):
bool turbojpeg_takes_scale(const JpegHeader& header, int scale_denom, ImageDimensions scaled) {
  if (scale_denom == 1) return true;  // no larger factor fits the full size
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  for (int i = 0; factors != nullptr && i < count; ++i) {
    const tjscalingfactor factor = factors[i];
    if (TJSCALED(header.width, factor) <= scaled.width &&
        TJSCALED(header.height, factor) <= scaled.height) {
      return factor.num * scale_denom == factor.denom;
    }
  }
  return false;
}

// A region through jpeg_region::decode, its outcome as a Status: OK for `decoded` and for
// `not_rgb` (nothing decoded: the caller takes the full-image path), which `outcome` tells apart.
Status decode_jpeg_region(std::string_view bytes, int scale_denom, CropWindow wanted,
                          int64_t max_pixels, RgbImage* out, CropWindow* decoded,
                          jpeg_region::Outcome* outcome) {
  std::string message;
  *outcome = jpeg_region::decode(bytes, scale_denom, wanted, max_pixels, out, decoded, &message);
  switch (*outcome) {
    case jpeg_region::Outcome::decoded:
    case jpeg_region::Outcome::not_rgb: return Status();
    case jpeg_region::Outcome::over_pixel_limit: return resource_exhausted(message);
    case jpeg_region::Outcome::failed: break;
  }
  return error("JPEG decode failed: ", message);
}

Status decode_jpeg_into(std::string_view bytes, int scale_denom, RgbImage* out,
                        int64_t max_pixels) {
  if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8) {
    return error("JPEG scale denominator must be 1, 2, 4 or 8, got ", scale_denom);
  }
  IC_ASSIGN_OR_RETURN(const JpegHeader header, read_jpeg_header(bytes));
  IC_RETURN_IF_ERROR(check_pixel_limit(ImageDimensions{header.height, header.width}, max_pixels));
  const int height = jpeg_scaled_size(header.height, scale_denom);
  const int width = jpeg_scaled_size(header.width, scale_denom);
  if (!turbojpeg_takes_scale(header, scale_denom, ImageDimensions{height, width})) {
    // A tiny image. CMYK ones (the region decoder is RGB only) go on to TurboJPEG's nearest
    // factor: same size, slightly other pixels, the same as their region decode, which falls
    // back to this function.
    CropWindow decoded;
    jpeg_region::Outcome outcome = jpeg_region::Outcome::failed;
    IC_RETURN_IF_ERROR(decode_jpeg_region(bytes, scale_denom, CropWindow{0, 0, height, width},
                                          max_pixels, out, &decoded, &outcome));
    if (outcome == jpeg_region::Outcome::decoded) return Status();
  }
  const TjHandle owned_handle = new_decompressor();
  tjhandle handle = owned_handle.get();
  if (handle == nullptr) return error("cannot create a TurboJPEG decompressor");
  // TensorFlow's decode_jpeg uses libjpeg's fast integer IDCT (JDCT_IFAST) by default.
  const int flags = TJFLAG_FASTDCT;
  out->height = height;
  out->width = width;
  out->pixels.resize(static_cast<size_t>(height) * width * 3);
  if (!header.is_cmyk) {
    return decode_result(handle,
                         tjDecompress2(handle, as_bytes(bytes), bytes.size(), out->pixels.data(),
                                       width, 0, height, TJPF_RGB, flags),
                         bytes, "JPEG");
  }
  // CMYK/YCCK: libjpeg gives CMYK as stored; convert like TensorFlow's jpeg_mem.cc. Adobe files
  // store inverted values (255 = no ink), so R = C*K/255; other files R = (255-C)(255-K)/255.
  std::vector<uint8_t> cmyk(static_cast<size_t>(height) * width * 4);
  IC_RETURN_IF_ERROR(decode_result(handle,
                                   tjDecompress2(handle, as_bytes(bytes), bytes.size(), cmyk.data(),
                                                 width, 0, height, TJPF_CMYK, flags),
                                   bytes, "CMYK JPEG"));
  const bool inverted = has_adobe_marker(bytes);
  const size_t count = static_cast<size_t>(height) * width;
  for (size_t i = 0; i < count; ++i) {
    const int k = cmyk[4 * i + 3];
    for (int c = 0; c < 3; ++c) {
      const int v = cmyk[4 * i + c];
      out->pixels[3 * i + c] =
          static_cast<uint8_t>(inverted ? (k * v) / 255 : (255 - k) * (255 - v) / 255);
    }
  }
  return Status();
}

struct PngImageFree {
  void operator()(png_image* image) const { png_image_free(image); }
};

Status decode_png_into(std::string_view bytes, RgbImage* out, int64_t max_pixels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) {
    return error("PNG decode failed: ", image.message);
  }
  std::unique_ptr<png_image, PngImageFree> guard(&image);
  // libpng has read the header chunks only; the pixels are allocated below, from its claim.
  IC_RETURN_IF_ERROR(check_pixel_limit(
      ImageDimensions{static_cast<int>(std::min<png_uint_32>(image.height, INT32_MAX)),
                      static_cast<int>(std::min<png_uint_32>(image.width, INT32_MAX))},
      max_pixels));
  // 16-bit samples without gAMA/sRGB are taken as sRGB-encoded and scaled to 8 bits, as
  // TensorFlow does, rather than treated as linear light.
  image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  // With alpha we read RGBA and drop A (TensorFlow strips alpha; libpng would composite).
  const bool has_alpha = (image.format & PNG_FORMAT_FLAG_ALPHA) != 0;
  image.format = has_alpha ? PNG_FORMAT_RGBA : PNG_FORMAT_RGB;
  const int channels = has_alpha ? 4 : 3;
  out->height = static_cast<int>(image.height);
  out->width = static_cast<int>(image.width);
  const size_t count = static_cast<size_t>(image.height) * image.width;
  std::vector<uint8_t> rgba;
  uint8_t* target = nullptr;
  out->pixels.resize(count * 3);
  if (has_alpha) {
    rgba.resize(count * 4);
    target = rgba.data();
  } else {
    target = out->pixels.data();
  }
  if (!png_image_finish_read(&image, nullptr, target,
                             static_cast<png_int_32>(image.width) * channels, nullptr)) {
    return error("PNG decode failed: ", image.message);
  }
  if (has_alpha) {
    for (size_t i = 0; i < count; ++i) std::memcpy(&out->pixels[3 * i], &rgba[4 * i], 3);
  }
  return Status();
}

}  // namespace

ImageFormat sniff_image_format(std::string_view bytes) {
  if (bytes.size() >= 3 && static_cast<uint8_t>(bytes[0]) == 0xFF &&
      static_cast<uint8_t>(bytes[1]) == 0xD8 && static_cast<uint8_t>(bytes[2]) == 0xFF) {
    return ImageFormat::jpeg;
  }
  static constexpr char kPngMagic[] = "\x89PNG\r\n\x1a\n";
  if (bytes.size() >= 8 && bytes.substr(0, 8) == std::string_view(kPngMagic, 8)) {
    return ImageFormat::png;
  }
  return ImageFormat::unknown;
}

Result<JpegHeader> read_jpeg_header(std::string_view bytes) {
  const TjHandle owned_handle = new_decompressor();
  tjhandle handle = owned_handle.get();
  if (handle == nullptr) return error("cannot create a TurboJPEG decompressor");
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle, as_bytes(bytes), bytes.size(), &width, &height, &subsampling,
                          &colorspace) != 0) {
    return error("not a readable JPEG header: ", tjGetErrorStr2(handle));
  }
  if (width <= 0 || height <= 0) {  // a truncated header can "succeed" with no frame read
    return error("JPEG header has no frame (", bytes.size(), " bytes)");
  }
  JpegHeader header;
  header.height = height;
  header.width = width;
  header.is_cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  header.components = colorspace == TJCS_GRAY ? 1 : header.is_cmyk ? 4 : 3;
  return header;
}

Result<ImageDimensions> read_image_dimensions(std::string_view bytes) {
  switch (sniff_image_format(bytes)) {
    case ImageFormat::jpeg: {
      IC_ASSIGN_OR_RETURN(const JpegHeader header, read_jpeg_header(bytes));
      return ImageDimensions{header.height, header.width};
    }
    case ImageFormat::png: {
      // Signature (8) | chunk length (4) | "IHDR" | width (4, big-endian) | height (4) | ...
      if (bytes.size() < 24 || bytes.substr(12, 4) != "IHDR") {
        return error("PNG has no IHDR header chunk (", bytes.size(), " bytes)");
      }
      auto be32 = [&](size_t at) {
        uint32_t v = 0;
        for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
        return v;
      };
      const uint32_t width = be32(16), height = be32(20);
      // The PNG specification limits both to 2^31 - 1, so they fit an int.
      if (width == 0 || height == 0 || width > 0x7fffffffu || height > 0x7fffffffu) {
        return error("PNG header claims an invalid size ", width, "x", height);
      }
      return ImageDimensions{static_cast<int>(height), static_cast<int>(width)};
    }
    case ImageFormat::unknown: break;
  }
  return error("image is neither JPEG nor PNG (", bytes.size(), " bytes)");
}

Status check_image_pixels(std::string_view bytes, int64_t max_pixels) {
  if (max_pixels <= 0) return Status();
  IC_ASSIGN_OR_RETURN(const ImageDimensions size, read_image_dimensions(bytes));
  return check_pixel_limit(size, max_pixels);
}

Status check_pixel_limit(ImageDimensions size, int64_t max_pixels) {
  if (max_pixels > 0 && size.pixels() > max_pixels) {
    return resource_exhausted("image header claims ", size.width, "x", size.height, " = ",
                              size.pixels(), " pixels, more than the limit of ", max_pixels,
                              " (--max_image_pixels); not decoded");
  }
  return Status();
}

Status decode_image_into(std::string_view bytes, int scale_denom, RgbImage* out,
                         int64_t max_pixels) {
  switch (sniff_image_format(bytes)) {
    case ImageFormat::jpeg: return decode_jpeg_into(bytes, scale_denom, out, max_pixels);
    case ImageFormat::png: return decode_png_into(bytes, out, max_pixels);
    case ImageFormat::unknown: break;
  }
  return error("image is neither JPEG nor PNG (", bytes.size(), " bytes)");
}

Result<RgbImage> decode_image(std::string_view bytes, int scale_denom, int64_t max_pixels) {
  RgbImage image;
  IC_RETURN_IF_ERROR(decode_image_into(bytes, scale_denom, &image, max_pixels));
  return image;
}

Status decode_image_region_into(std::string_view bytes, int scale_denom, CropWindow wanted,
                                RgbImage* out, CropWindow* decoded, int64_t max_pixels) {
  const ImageFormat format = sniff_image_format(bytes);
  if (format == ImageFormat::jpeg) {
    if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8) {
      return error("JPEG scale denominator must be 1, 2, 4 or 8, got ", scale_denom);
    }
    jpeg_region::Outcome outcome = jpeg_region::Outcome::failed;
    IC_RETURN_IF_ERROR(
        decode_jpeg_region(bytes, scale_denom, wanted, max_pixels, out, decoded, &outcome));
    if (outcome == jpeg_region::Outcome::decoded) return Status();
    // not_rgb, CMYK: TensorFlow's conversion, whole image (below)
  }
  IC_RETURN_IF_ERROR(
      decode_image_into(bytes, format == ImageFormat::png ? 1 : scale_denom, out, max_pixels));
  *decoded = CropWindow{0, 0, out->height, out->width};
  return Status();
}

Result<std::string> encode_jpeg(const RgbImage& image, int quality) {
  if (quality < 1 || quality > 100) return error("JPEG quality must be in [1, 100], got ", quality);
  if (image.height <= 0 || image.width <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.height) * image.width * 3) {
    return error("cannot encode a ", image.height, "x", image.width, " image with ",
                 image.pixels.size(), " bytes of pixels");
  }
  tjhandle handle = thread_compressor();
  if (handle == nullptr) return error("cannot create a TurboJPEG compressor");
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, image.pixels.data(), image.width, 0, image.height, TJPF_RGB,
                             &buffer, &size, TJSAMP_420, quality, 0);
  std::unique_ptr<unsigned char, TjBufferFree> owned(buffer);
  if (rc != 0) return error("JPEG encode failed: ", tjGetErrorStr2(handle));
  return std::string(reinterpret_cast<const char*>(buffer), size);
}

Result<std::string> encode_png(const RgbImage& image) {
  if (image.height <= 0 || image.width <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.height) * image.width * 3) {
    return error("cannot encode a ", image.height, "x", image.width, " image as PNG");
  }
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), 0, nullptr)) {
    return error("PNG encode failed: ", png.message);
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, image.pixels.data(), 0, nullptr)) {
    return error("PNG encode failed: ", png.message);
  }
  out.resize(size);
  return out;
}

}  // namespace ic
