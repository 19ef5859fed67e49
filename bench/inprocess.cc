// bench_inprocess: the reference. What c-blosc2 itself takes, in this
// process, for the reads the FUSE routes replay through a mount.
//
//   bench_inprocess [--repeat K] [--evict] FILE.b2nd OP [ARGS]
//     whole                      b2nd_open + b2nd_to_cbuffer of the whole array
//     slice AXIS                 b2nd_open + b2nd_get_slice_cbuffer at the middle index of AXIS
//     rand COUNT LENGTH SEED     b2nd_open + COUNT flat reads of LENGTH bytes (the offsets of
//                                bench_reader rand), each as the few boxes it covers
//     cubes COUNT EDGE SEED      b2nd_open + COUNT get_slice of EDGE^3 sub-cubes
//     first                      b2nd_open + the first 4 KiB of the C-order array
//     planes AXIS                b2nd_open + b2nd_to_cbuffer, then every slab along AXIS in
//                                index order gathered into one buffer each (the bytes of
//                                reading every file of b2ndfs's slices/AXIS/ in name order;
//                                the checksum covers their concatenation)
//     open                       b2nd_open + b2nd_free alone
//     box START STOP             b2nd_open + b2nd_get_slice_cbuffer of one box (comma-separated
//                                coordinates; bench/ome.py: a pyramid tile's footprint)
//
// --repeat K runs the operation K times and reports the median; --evict drops
// the source from the page cache (posix_fadvise) before each of them.
// Decompression uses 2 threads (the decompression context of the opened
// super-chunk is replaced by one with nthreads = 2; BLOSC_NTHREADS=2 too).
// Each timing covers open, the reads and b2nd_free; output buffers are
// allocated and touched before the clock starts; the checksum is computed
// after it stops; cpu_seconds is the CPU time of all threads over the timed
// part. Prints one JSON object.
#include <b2nd.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"

namespace {

constexpr int kThreads = 2;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "bench_inprocess: %s\n", message.c_str());
  std::exit(1);
}

// CPU time of all threads of this process (c-blosc2's too).
double CpuSeconds() {
  struct rusage usage;
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// Drops the file's clean pages from the page cache.
void Evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) Die("cannot open " + path);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

b2nd_array_t* Open(const std::string& path) {
  b2nd_array_t* array = nullptr;
  if (b2nd_open(path.c_str(), &array) < 0 || array == nullptr) Die("cannot open " + path);
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  dparams.nthreads = kThreads;
  dparams.schunk = array->sc;
  blosc2_free_ctx(array->sc->dctx);
  array->sc->dctx = blosc2_create_dctx(dparams);
  return array;
}

void GetBox(const b2nd_array_t* array, const std::vector<int64_t>& start,
            const std::vector<int64_t>& stop, uint8_t* out) {
  std::vector<int64_t> shape(start.size());
  int64_t items = 1;
  for (size_t d = 0; d < start.size(); ++d) {
    shape[d] = stop[d] - start[d];
    items *= shape[d];
  }
  const int rc = b2nd_get_slice_cbuffer(array, start.data(), stop.data(), out, shape.data(),
                                        items * array->sc->typesize);
  if (rc < 0) Die("b2nd_get_slice_cbuffer failed: " + std::to_string(rc));
}

// Reads bytes [offset, offset + length) of the C-order array into `out`.
void GetFlat(const b2nd_array_t* array, int64_t offset, int64_t length, uint8_t* out) {
  const int64_t itemsize = array->sc->typesize;
  const std::vector<int64_t> shape(array->shape, array->shape + array->ndim);
  for (const bench::Box& box :
       bench::SplitFlatRange(shape, offset / itemsize, (offset + length) / itemsize)) {
    int64_t bytes = itemsize;
    for (size_t d = 0; d < box.start.size(); ++d) bytes *= box.stop[d] - box.start[d];
    GetBox(array, box.start, box.stop, out);
    out += bytes;
  }
}

struct Args {
  std::vector<std::string> v;
  int64_t Int(size_t i) const {
    if (i >= v.size()) Die("missing argument");
    return std::atoll(v[i].c_str());
  }
};

}  // namespace

int main(int argc, char** argv) {
  int repeat = 1;
  bool evict = false;
  int first_arg = 1;
  for (; first_arg < argc; ++first_arg) {
    const std::string a = argv[first_arg];
    if (a == "--repeat" && first_arg + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++first_arg]));
    } else if (a == "--evict") {
      evict = true;
    } else {
      break;
    }
  }
  if (argc - first_arg < 2) {
    Die("usage: bench_inprocess [--repeat K] [--evict] FILE.b2nd whole|slice AXIS|"
        "rand COUNT LENGTH SEED|cubes COUNT EDGE SEED|first|planes AXIS|open|box START STOP");
  }
  const std::string path = argv[first_arg];
  const std::string op = argv[first_arg + 1];
  Args args;
  for (int i = first_arg + 2; i < argc; ++i) args.v.push_back(argv[i]);
  ::setenv("BLOSC_NTHREADS", std::to_string(kThreads).c_str(), 1);
  blosc2_init();

  // Geometry first, from an untimed open.
  std::vector<int64_t> shape;
  int64_t itemsize = 0;
  {
    b2nd_array_t* probe = Open(path);
    shape.assign(probe->shape, probe->shape + probe->ndim);
    itemsize = probe->sc->typesize;
    b2nd_free(probe);
  }
  int64_t nitems = 1;
  for (int64_t s : shape) nitems *= s;
  const int64_t nbytes = nitems * itemsize;

  std::vector<uint8_t> out;
  bench::Checksum checksum;
  double open_seconds = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  double min_seconds = 0;
  int64_t bytes = 0;
  int calls = 0;

  // Runs `body` `repeat` times (evicting the source first if asked) and keeps
  // the run of median time.
  auto timed = [&](auto&& body) {
    struct Run {
      double seconds, open_seconds, cpu_seconds;
    };
    std::vector<Run> runs;
    for (int k = 0; k < repeat; ++k) {
      if (evict) Evict(path);
      const double cpu0 = CpuSeconds();
      const double t0 = bench::Seconds();
      b2nd_array_t* array = Open(path);
      const double t1 = bench::Seconds();
      body(array);
      b2nd_free(array);
      runs.push_back(Run{bench::Seconds() - t0, t1 - t0, CpuSeconds() - cpu0});
    }
    std::sort(runs.begin(), runs.end(),
              [](const Run& x, const Run& y) { return x.seconds < y.seconds; });
    seconds = runs[runs.size() / 2].seconds;
    open_seconds = runs[runs.size() / 2].open_seconds;
    cpu_seconds = runs[runs.size() / 2].cpu_seconds;
    min_seconds = runs.front().seconds;
  };

  if (op == "open") {
    timed([](b2nd_array_t*) {});
  } else if (op == "whole") {
    out.assign(static_cast<size_t>(nbytes), 1);
    timed([&](b2nd_array_t* array) {
      if (b2nd_to_cbuffer(array, out.data(), nbytes) < 0) Die("b2nd_to_cbuffer failed");
    });
    bytes = nbytes;
    calls = 1;
  } else if (op == "slice") {
    const int axis = static_cast<int>(args.Int(0));
    if (axis < 0 || axis >= static_cast<int>(shape.size())) Die("bad axis");
    std::vector<int64_t> start(shape.size(), 0), stop = shape;
    start[static_cast<size_t>(axis)] = shape[static_cast<size_t>(axis)] / 2;
    stop[static_cast<size_t>(axis)] = start[static_cast<size_t>(axis)] + 1;
    bytes = nbytes / shape[static_cast<size_t>(axis)];
    out.assign(static_cast<size_t>(bytes), 1);
    timed([&](b2nd_array_t* array) { GetBox(array, start, stop, out.data()); });
    calls = 1;
  } else if (op == "rand") {
    const int count = static_cast<int>(args.Int(0));
    const int64_t length = args.Int(1);
    const auto offsets =
        bench::RandomOffsets(nbytes, length, count, static_cast<uint64_t>(args.Int(2)));
    out.assign(static_cast<size_t>(length * count), 1);
    timed([&](b2nd_array_t* array) {
      for (int i = 0; i < count; ++i) {
        GetFlat(array, offsets[static_cast<size_t>(i)], length, out.data() + i * length);
      }
    });
    bytes = length * count;
    calls = count;
  } else if (op == "cubes") {
    if (shape.size() != 3) Die("cubes needs a 3-D array");
    const int count = static_cast<int>(args.Int(0));
    const int64_t edge = args.Int(1);
    const auto origins = bench::CubeOrigins({shape[0], shape[1], shape[2]}, edge, count,
                                            static_cast<uint64_t>(args.Int(2)));
    const int64_t cube_bytes = edge * edge * edge * itemsize;
    out.assign(static_cast<size_t>(cube_bytes * count), 1);
    timed([&](b2nd_array_t* array) {
      for (int i = 0; i < count; ++i) {
        const auto& o = origins[static_cast<size_t>(i)];
        GetBox(array, {o[0], o[1], o[2]}, {o[0] + edge, o[1] + edge, o[2] + edge},
               out.data() + i * cube_bytes);
      }
    });
    bytes = cube_bytes * count;
    calls = count;
  } else if (op == "planes") {
    if (shape.size() != 3) Die("planes needs a 3-D array");
    const int axis = static_cast<int>(args.Int(0));
    if (axis < 0 || axis > 2) Die("bad axis");
    std::vector<uint8_t> whole(static_cast<size_t>(nbytes), 1);
    const size_t n0 = static_cast<size_t>(shape[0]), n1 = static_cast<size_t>(shape[1]),
                 n2 = static_cast<size_t>(shape[2]);
    const size_t item = static_cast<size_t>(itemsize);
    const size_t n_axis = static_cast<size_t>(shape[static_cast<size_t>(axis)]);
    const size_t plane = static_cast<size_t>(nbytes) / n_axis;
    out.assign(plane, 1);
    // The checksum runs inside the clock here (it must see every plane);
    // this operation is the correctness reference of slices/AXIS/, not a target.
    timed([&](b2nd_array_t* array) {
      if (b2nd_to_cbuffer(array, whole.data(), nbytes) < 0) Die("b2nd_to_cbuffer failed");
      for (size_t i = 0; i < n_axis; ++i) {
        uint8_t* o = out.data();
        for (size_t a = 0; a < (axis == 0 ? n1 : n0); ++a) {
          for (size_t b = 0; b < (axis == 2 ? n1 : n2); ++b) {
            size_t z = a, y = b, x = i;  // axis 2
            if (axis == 0) z = i, y = a, x = b;
            if (axis == 1) z = a, y = i, x = b;
            std::memcpy(o, whole.data() + ((z * n1 + y) * n2 + x) * item, item);
            o += item;
          }
        }
        checksum.Update(out.data(), plane);
      }
    });
    bytes = nbytes;
    calls = 1;
  } else if (op == "box") {
    if (args.v.size() != 2) Die("box START STOP");
    auto coords = [&](const std::string& text) {
      std::vector<int64_t> v;
      size_t at = 0;
      while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        v.push_back(std::atoll(text.substr(at, comma - at).c_str()));
        at = comma + 1;
      }
      return v;
    };
    const std::vector<int64_t> start = coords(args.v[0]), stop = coords(args.v[1]);
    if (start.size() != shape.size() || stop.size() != shape.size()) Die("box: wrong ndim");
    bytes = itemsize;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (start[i] < 0 || stop[i] > shape[i] || start[i] >= stop[i]) Die("box: outside");
      bytes *= stop[i] - start[i];
    }
    out.assign(static_cast<size_t>(bytes), 1);
    timed([&](b2nd_array_t* array) { GetBox(array, start, stop, out.data()); });
    calls = 1;
  } else if (op == "first") {
    bytes = std::min<int64_t>(4096, nbytes);
    out.assign(static_cast<size_t>(bytes), 1);
    timed([&](b2nd_array_t* array) { GetFlat(array, 0, bytes, out.data()); });
    calls = 1;
  } else {
    Die("unknown operation " + op);
  }
  if (op != "planes") checksum.Update(out.data(), static_cast<size_t>(bytes));
  std::printf(
      "{\"tool\": \"inprocess\", \"op\": \"%s\", \"seconds\": %.6f, \"min_seconds\": %.6f, "
      "\"repeat\": %d, \"open_seconds\": %.6f, "
      "\"cpu_seconds\": %.6f, \"bytes\": %lld, \"calls\": %d, \"nthreads\": %d, "
      "\"checksum\": \"%s\"}\n",
      op.c_str(), seconds, min_seconds, repeat, open_seconds, cpu_seconds,
      static_cast<long long>(bytes), calls, kThreads, checksum.Hex().c_str());
  blosc2_destroy();
  return 0;
}
