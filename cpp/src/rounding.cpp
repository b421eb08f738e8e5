// float64 values rounded once to a result dtype (rounding.hpp). Compiled once per ISA.
#include "posenc/vector_width_256.hpp"
#include "posenc/rounding.hpp"

#include "posenc/chunks.hpp"
#include "posenc/parallel.hpp"

POSENC_BEGIN_TARGET
namespace {

template <class T>
void round_values(const double* src, std::int64_t n, void* dst) {
    T* out = static_cast<T*>(dst);
    parallel_chunks(n, plan_threads(n, 1), [&](std::int64_t begin, std::int64_t end, int) {
        round_into(src + begin, end - begin, out + begin, 1);
    });
}

}  // namespace

extern const RoundingKernels rounding = {
    {round_values<float>, round_values<double>, round_values<half_t>, round_values<bfloat16_t>},
};

POSENC_END_TARGET
