// A C++ program built against an installed Concord (examples/cpp/README.md): every rank
// contributes rank + 1 in each element of a float32 tensor; after the allreduce (sum) every
// element must equal size * (size + 1) / 2 on every rank.
//
//   mpirun -np 2 ./concord_allreduce_example [ELEMENTS]
//
// Exit status 0 when the result is right, 1 (with the rank and the first wrong element) when
// it is not, 2 for a Concord error.
#include <concord/concord.h>
#include <concord/version.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

int main(int argc, char** argv) {
  const long elements = argc > 1 ? std::atol(argv[1]) : 1000;
  try {
    concord::init();
    const int rank = concord::rank();
    const int size = concord::size();
    std::vector<float> data(static_cast<size_t>(elements), static_cast<float>(rank + 1));
    concord::TensorView view{data.data(), concord::DataType::kFloat32, {elements}};
    concord::allreduce_async("example.gradient", view, view).wait();

    const float expected = static_cast<float>(size) * static_cast<float>(size + 1) / 2;
    int status = 0;
    for (long i = 0; i < elements; ++i) {
      if (data[static_cast<size_t>(i)] != expected) {
        std::fprintf(stderr, "rank %d of %d: element %ld is %g, expected %g\n", rank, size, i,
                     static_cast<double>(data[static_cast<size_t>(i)]), static_cast<double>(expected));
        status = 1;
        break;
      }
    }
    if (status == 0)
      std::printf("rank %d of %d: allreduce of %ld float32 elements correct (Concord %s)\n", rank, size, elements,
                  CONCORD_VERSION_STRING);
    concord::shutdown();
    return status;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "concord error: %s\n", error.what());
    return 2;
  }
}
