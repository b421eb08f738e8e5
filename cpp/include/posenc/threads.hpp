// posenc/threads.hpp — how many threads a kernel may use (shared by every ISA).
#pragma once

namespace posenc {

// 0 restores the default: OpenMP's own (OMP_NUM_THREADS, threadpoolctl).
void set_num_threads(int n);
// Threads a kernel started from this thread may use; 1 without OpenMP and in
// a child process forked after posenc started threads (GNU OpenMP's pool does
// not survive fork).
int num_threads();
// Called in the child after os.fork().
void mark_forked_child();
bool have_openmp();

}  // namespace posenc
