#include "data/jpeg_region.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <iterator>

namespace ic::jpeg_region {
namespace {

// The warnings that mean missing or damaged data (see is_damage_warning).
constexpr int kDamageWarnings[] = {JWRN_JPEG_EOF, JWRN_HIT_MARKER, JWRN_HUFF_BAD_CODE,
                                   JWRN_ARITH_BAD_CODE, JWRN_MUST_RESYNC};

// libjpeg reports fatal errors through error_exit, which must not return: we longjmp back to
// the setjmp in run_decode. Warnings go to emit_message; the first damage warning is kept, and
// makes the decode fail (is_damage_warning).
struct ErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  bool damaged;
  char damage[JMSG_LENGTH_MAX];  // the first damage warning, formatted
  char message[JMSG_LENGTH_MAX];
};

void on_error_exit(j_common_ptr cinfo) {
  ErrorManager* errors = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int level) {
  if (level < 0) {  // a warning (level >= 0 are trace messages)
    ErrorManager* errors = reinterpret_cast<ErrorManager*>(cinfo->err);
    if (!errors->damaged && is_damage_warning(cinfo->err->msg_code)) {
      errors->damaged = true;
      (*cinfo->err->format_message)(cinfo, errors->damage);
    }
    cinfo->err->num_warnings++;
  }
}

// One decompressor per image: libjpeg keeps Huffman and quantization tables in a decompressor
// from one image to the next, so a reused one would decode a stream that leaves a table
// undefined with an earlier image's table (creating one costs well under a microsecond).
class Decompressor {
 public:
  Decompressor() {
    std::memset(&cinfo_, 0, sizeof(cinfo_));
    std::memset(&errors_, 0, sizeof(errors_));
    cinfo_.err = jpeg_std_error(&errors_.pub);
    errors_.pub.error_exit = on_error_exit;
    errors_.pub.emit_message = on_emit_message;
    created_ = create(&cinfo_, &errors_);
  }
  ~Decompressor() {
    if (created_) jpeg_destroy_decompress(&cinfo_);
  }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  bool created() const { return created_; }
  jpeg_decompress_struct* cinfo() { return &cinfo_; }
  ErrorManager* errors() { return &errors_; }

 private:
  // Only trivially destructible locals live in a frame with setjmp.
  static bool create(jpeg_decompress_struct* cinfo, ErrorManager* errors) {
    if (setjmp(errors->jump)) return false;
    jpeg_create_decompress(cinfo);
    return true;
  }

  jpeg_decompress_struct cinfo_;
  ErrorManager errors_;
  bool created_ = false;
};

// Entropy-coded data cannot contain FF D9 (an FF there is always followed by 00 or a restart
// marker), so a stream whose last bytes are the EOI marker was not cut inside its scans.
bool ends_with_eoi(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[bytes.size() - 2]) == 0xFF &&
         static_cast<uint8_t>(bytes[bytes.size() - 1]) == 0xD9;
}

// Whether libjpeg will smooth blocks: a progressive JPEG some of whose low-frequency AC
// coefficients never arrived in full (a cut or damaged progression) gets interblock smoothing,
// which estimates them from the neighbouring blocks' DC values (jdcoefct.c, smoothing_ok; 1..9
// covers libjpeg-turbo 2.1's wider smoothing). A crop makes its first and last block columns
// the image's edges for that estimate, so such an image is decoded at full width. Valid after
// jpeg_start_decompress, which has read every scan of a progressive JPEG.
bool blocks_will_be_smoothed(const jpeg_decompress_struct* cinfo) {
  if (!cinfo->progressive_mode || !cinfo->do_block_smoothing || cinfo->coef_bits == nullptr) {
    return false;
  }
  constexpr int kSmoothedCoefficients = 9;
  for (int c = 0; c < cinfo->num_components; ++c) {
    for (int k = 1; k <= kSmoothedCoefficients; ++k) {
      if (cinfo->coef_bits[c][k] != 0) return true;
    }
  }
  return false;
}

struct Request {
  const unsigned char* data;
  unsigned long size;
  int scale_denom;
  CropWindow wanted;
  int64_t max_pixels;  // <= 0: no limit
  bool read_to_end;    // decode (entropy only) the rows below as well, to find a truncation
};

// The libjpeg calls, C style: every local is trivially destructible, and nothing written after
// setjmp is read after a longjmp except through the pointers. Returns false after a libjpeg
// error (message in the error manager). Over the pixel limit, `decoded` holds the claimed size.
bool run_decode(Decompressor* decompressor, const Request& request, Outcome* outcome, RgbImage* out,
                CropWindow* decoded) {
  jpeg_decompress_struct* cinfo = decompressor->cinfo();
  if (setjmp(decompressor->errors()->jump)) {
    jpeg_abort_decompress(cinfo);
    return false;
  }
  jpeg_mem_src(cinfo, request.data, request.size);
  jpeg_read_header(cinfo, TRUE);
  // Before jpeg_start_decompress, which allocates row buffers (and, for a progressive JPEG,
  // the whole image's coefficients) from the header's claim.
  if (request.max_pixels > 0 &&
      int64_t{cinfo->image_width} * cinfo->image_height > request.max_pixels) {
    *decoded = CropWindow{0, 0, static_cast<int>(cinfo->image_height),
                          static_cast<int>(cinfo->image_width)};
    jpeg_abort_decompress(cinfo);
    *outcome = Outcome::over_pixel_limit;
    return true;
  }
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    jpeg_abort_decompress(cinfo);
    *outcome = Outcome::not_rgb;
    return true;
  }
  // TurboJPEG's settings for TJPF_RGB with TJFLAG_FASTDCT, which decode_image_into uses.
  cinfo->out_color_space = JCS_EXT_RGB;
  cinfo->dct_method = JDCT_IFAST;
  cinfo->scale_num = 1;
  cinfo->scale_denom = static_cast<unsigned int>(request.scale_denom);
  jpeg_start_decompress(cinfo);

  const int height = static_cast<int>(cinfo->output_height);
  const int width = static_cast<int>(cinfo->output_width);
  const int y0 = std::clamp(request.wanted.y, 0, height - 1);
  const int y1 = std::clamp(request.wanted.y + request.wanted.height, y0 + 1, height);
  // Fancy upsampling treats a cropped row's ends as the image's edges (libjpeg.txt, "Partial
  // image decompression"), so one column of margin keeps `wanted` exact.
  int x0 = std::clamp(request.wanted.x - 1, 0, width - 1);
  int x1 = std::clamp(request.wanted.x + request.wanted.width + 1, x0 + 1, width);
  // libjpeg upsamples a component fancily only when it is more than 2 samples wide (jdsample.c),
  // and a crop narrows every component: a narrow crop of a wider image would be box-upsampled,
  // other pixels than the full decode's. A component is at most 4 times subsampled, so 12
  // columns give it 3 samples.
  constexpr int kMinCropWidth = 12;
  if (x1 - x0 < kMinCropWidth) {
    x1 = std::min(width, x0 + kMinCropWidth);
    x0 = std::max(0, x1 - kMinCropWidth);
  }
  const bool crop = (x0 > 0 || x1 < width) && !blocks_will_be_smoothed(cinfo);
  JDIMENSION crop_x = crop ? static_cast<JDIMENSION>(x0) : 0;
  JDIMENSION crop_width = static_cast<JDIMENSION>(x1 - x0);
  if (crop) jpeg_crop_scanline(cinfo, &crop_x, &crop_width);  // aligns x left
  const int out_width = static_cast<int>(cinfo->output_width);
  out->height = y1 - y0;
  out->width = out_width;
  out->pixels.resize(static_cast<size_t>(y1 - y0) * out_width * 3);
  *decoded = CropWindow{y0, static_cast<int>(crop_x), y1 - y0, out_width};

  if (y0 > 0) jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(y0));
  const size_t stride = static_cast<size_t>(out_width) * 3;
  while (static_cast<int>(cinfo->output_scanline) < y1) {
    JSAMPROW row = out->pixels.data() + (cinfo->output_scanline - y0) * stride;
    if (jpeg_read_scanlines(cinfo, &row, 1) != 1) break;  // cannot happen with a memory source
  }
  // A progressive JPEG's scans were all read by jpeg_start_decompress (their damage warnings
  // with them), so only a single-scan one has rows below the region still to entropy-decode.
  // Skipping them in a progressive one is needless and not safe either: libjpeg-turbo 2.1's
  // jpeg_skip_scanlines never returns for some of them (e.g. luma sampled 1x4 or 2x4) when the
  // skip starts after a read.
  const bool read_rest = request.read_to_end && !cinfo->progressive_mode;
  if (read_rest && y1 < height) {
    // Skipping to the very end returns at once without reading, so skip all but the last row
    // and decode that one into a spare row past the region.
    if (y1 < height - 1) jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(height - 1 - y1));
    out->pixels.resize(out->pixels.size() + stride);
    JSAMPROW spare = out->pixels.data() + static_cast<size_t>(y1 - y0) * stride;
    jpeg_read_scanlines(cinfo, &spare, 1);
    out->pixels.resize(out->pixels.size() - stride);
  }
  if (read_rest) jpeg_finish_decompress(cinfo);  // reads up to EOI, as the full decode
  jpeg_abort_decompress(cinfo);
  *outcome = Outcome::decoded;
  return true;
}

// The whole stream at 1/8 scale, each row read into one spare row that libjpeg allocates (and
// frees with the decompressor), in whatever colour space the JPEG decodes to by default.
bool run_check(Decompressor* decompressor, const unsigned char* data, unsigned long size) {
  jpeg_decompress_struct* cinfo = decompressor->cinfo();
  if (setjmp(decompressor->errors()->jump)) {
    jpeg_abort_decompress(cinfo);
    return false;
  }
  jpeg_mem_src(cinfo, data, size);
  jpeg_read_header(cinfo, TRUE);
  cinfo->dct_method = JDCT_IFAST;
  cinfo->scale_num = 1;
  cinfo->scale_denom = 8;
  jpeg_start_decompress(cinfo);
  JSAMPARRAY row = (*cinfo->mem->alloc_sarray)(
      reinterpret_cast<j_common_ptr>(cinfo), JPOOL_IMAGE,
      cinfo->output_width * static_cast<JDIMENSION>(cinfo->output_components), 1);
  while (cinfo->output_scanline < cinfo->output_height) {
    if (jpeg_read_scanlines(cinfo, row, 1) != 1) break;  // cannot happen with a memory source
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

}  // namespace

bool is_damage_warning(int msg_code) {
  return std::find(std::begin(kDamageWarnings), std::end(kDamageWarnings), msg_code) !=
         std::end(kDamageWarnings);
}

bool stream_is_intact(std::string_view bytes, std::string* message) {
  Decompressor decompressor;
  if (!decompressor.created()) {
    *message = "cannot create a libjpeg decompressor";
    return false;
  }
  ErrorManager* errors = decompressor.errors();
  if (!run_check(&decompressor, reinterpret_cast<const unsigned char*>(bytes.data()),
                 static_cast<unsigned long>(bytes.size()))) {
    *message = errors->message;
    return false;
  }
  if (errors->damaged) {
    *message = errors->damage;
    return false;
  }
  return true;
}

Outcome decode(std::string_view bytes, int scale_denom, CropWindow wanted, int64_t max_pixels,
               RgbImage* out, CropWindow* decoded, std::string* message) {
  Decompressor decompressor;
  if (!decompressor.created()) {
    *message = "cannot create a libjpeg decompressor";
    return Outcome::failed;
  }
  ErrorManager* errors = decompressor.errors();
  const Request request{reinterpret_cast<const unsigned char*>(bytes.data()),
                        static_cast<unsigned long>(bytes.size()),
                        scale_denom,
                        wanted,
                        max_pixels,
                        !ends_with_eoi(bytes)};
  Outcome outcome = Outcome::failed;
  if (!run_decode(&decompressor, request, &outcome, out, decoded)) {
    *message = errors->message;
    return Outcome::failed;
  }
  if (outcome == Outcome::over_pixel_limit) {
    *message =
        check_pixel_limit(ImageDimensions{decoded->height, decoded->width}, max_pixels).message();
    return outcome;
  }
  if (errors->damaged) {
    *message = errors->damage;
    return Outcome::failed;
  }
  return outcome;
}

}  // namespace ic::jpeg_region
