// Thread budget shared by every kernel. Kept out of the per-ISA sources so
// there is exactly one copy of this state.
#include "posenc/threads.hpp"

#include <atomic>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace posenc {

namespace {
std::atomic<int> g_requested{0};
std::atomic<bool> g_forked_child{false};
}  // namespace

void set_num_threads(int n) { g_requested.store(n < 0 ? 0 : n); }

int num_threads() {
#ifdef _OPENMP
    if (g_forked_child.load()) return 1;
    const int requested = g_requested.load();
    return requested > 0 ? requested : omp_get_max_threads();
#else
    return 1;
#endif
}

void mark_forked_child() { g_forked_child.store(true); }

bool have_openmp() {
#ifdef _OPENMP
    return true;
#else
    return false;
#endif
}

}  // namespace posenc
