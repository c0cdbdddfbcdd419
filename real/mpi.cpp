// mpi.cpp: MPI start-up, string gather/broadcast and abort.
#include "real/mpi.hpp"

#include <mpi.h>

#include <fmt/format.h>

#include <cstdlib>

#include "core/error.hpp"

namespace gradsync::real::mpi {

std::string launcher() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK")) return "mpirun";
  if (std::getenv("SLURM_PROCID") && std::getenv("SLURM_NTASKS") && std::getenv("SLURM_STEP_ID")) return "srun";
  return "";
}

int launcher_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n > 0 && n < (1L << 24)) return static_cast<int>(n);
  }
  return 0;
}

bool initialized() {
  int flag = 0;
  MPI_Initialized(&flag);
  int done = 0;
  MPI_Finalized(&done);
  return flag && !done;
}

void init() {
  if (initialized()) return;
  int provided = 0;
  const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) throw RuntimeError(fmt::format("real: MPI_Init_thread failed (error {})", rc));
  if (provided < MPI_THREAD_SERIALIZED) {
    throw RuntimeError(fmt::format(
        "real: this MPI provides thread level {}; gradsync needs MPI_THREAD_SERIALIZED or better (a comm stream "
        "thread issues the collectives)",
        provided));
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

void finalize() {
  if (initialized()) MPI_Finalize();
}

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

std::string processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

std::string version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  if (const auto comma = s.find(','); comma != std::string::npos) s.resize(comma);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void barrier() { MPI_Barrier(MPI_COMM_WORLD); }

std::vector<std::string> gather(const std::string& mine) {
  const int n = size();
  const int me = rank();
  long long len = static_cast<long long>(mine.size());
  std::vector<long long> lens(static_cast<std::size_t>(n));
  MPI_Gather(&len, 1, MPI_LONG_LONG, lens.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  // Large traces: send in pieces of at most 1 GiB so that counts fit in an int.
  constexpr long long kPiece = 1LL << 30;
  std::vector<std::string> out;
  if (me == 0) {
    out.resize(static_cast<std::size_t>(n));
    out[0] = mine;
    for (int r = 1; r < n; ++r) {
      std::string& s = out[static_cast<std::size_t>(r)];
      s.resize(static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
      for (long long off = 0; off < static_cast<long long>(s.size()); off += kPiece) {
        const int count = static_cast<int>(std::min(kPiece, static_cast<long long>(s.size()) - off));
        MPI_Recv(s.data() + off, count, MPI_CHAR, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    }
  } else {
    for (long long off = 0; off < len; off += kPiece) {
      const int count = static_cast<int>(std::min(kPiece, len - off));
      MPI_Send(mine.data() + off, count, MPI_CHAR, 0, 7, MPI_COMM_WORLD);
    }
  }
  return out;
}

std::string broadcast(const std::string& from_root) {
  long long len = static_cast<long long>(from_root.size());
  MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  std::string s = from_root;
  s.resize(static_cast<std::size_t>(len));
  MPI_Bcast(s.data(), static_cast<int>(len), MPI_CHAR, 0, MPI_COMM_WORLD);
  return s;
}

bool all_ranks_on_one_host() {
  const std::vector<std::string> names = gather(processor_name());
  int same = 1;
  for (const auto& n : names)
    if (n != names.front()) same = 0;
  MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return same != 0;
}

int ranks_on_this_host() {
  MPI_Comm local = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) != MPI_SUCCESS) return 1;
  int n = 1;
  MPI_Comm_size(local, &n);
  MPI_Comm_free(&local);
  return n;
}

void abort(int code) {
  if (initialized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace gradsync::real::mpi
