#include "libtracer/analysis/importers/nsys_memory_usage.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "libtracer/analysis/importers/nsys_global_id.h"

namespace tracer::analysis::importers {
namespace {

constexpr std::string_view kTable = "CUDA_GPU_MEMORY_USAGE_EVENTS";

enum class Space : uint8_t { kDevice, kManaged, kHost, kUnknown };
enum class Operation : uint8_t { kAlloc, kFree, kUnknown };

// The export's own enum table (id, name), or fallback when it has none.
template <typename T>
std::unordered_map<int64_t, T> ReadEnum(NsysSchema* schema, std::string_view table,
                                        T (*by_name)(std::string_view),
                                        std::unordered_map<int64_t, T> fallback) {
  SqliteDb& db = schema->db();
  if (!db.HasColumn(table, "id") || !db.HasColumn(table, "name")) return fallback;
  SqliteStatement st;
  std::string error;
  if (!schema->Query(schema->Select(table, {"id", "name"}), &st, &error)) return fallback;
  std::unordered_map<int64_t, T> values;
  const int id = st.Column("id"), name = st.Column("name");
  while (st.Step()) {
    if (!st.IsNull(id) && !st.IsNull(name)) values[st.Int(id)] = by_name(st.Text(name));
  }
  return st.ok() && !values.empty() ? values : fallback;
}

Space SpaceByName(std::string_view name) {
  static constexpr std::pair<std::string_view, Space> kNames[] = {
      {"CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", Space::kHost},
      {"CUDA_MEMOPR_MEMORY_KIND_PINNED", Space::kHost},
      {"CUDA_MEMOPR_MEMORY_KIND_DEVICE", Space::kDevice},
      {"CUDA_MEMOPR_MEMORY_KIND_ARRAY", Space::kDevice},
      {"CUDA_MEMOPR_MEMORY_KIND_MANAGED", Space::kManaged},
      {"CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", Space::kDevice},
      {"CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", Space::kManaged}};
  for (const auto& [n, space] : kNames) {
    if (n == name) return space;
  }
  return Space::kUnknown;  // CUDA_MEMOPR_MEMORY_KIND_UNKNOWN and kinds added later
}

Operation OperationByName(std::string_view name) {
  if (name == "CUDA_DEV_MEM_EVENT_OPR_ALLOCATION") return Operation::kAlloc;
  if (name == "CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION") return Operation::kFree;
  return Operation::kUnknown;
}

struct Row {
  uint64_t ts;
  int64_t global_pid;
  int64_t device;
  uint64_t address;
  int64_t bytes;
  Space space;
  Operation op;
};

struct Live {
  int64_t device;
  Space space;
  int64_t bytes;
};

}  // namespace

NsysMemoryUsage ReadNsysMemoryUsage(NsysSchema* schema) {
  NsysMemoryUsage out;
  SqliteDb& db = schema->db();
  if (!db.HasTable(kTable)) return out;
  for (std::string_view c :
       {"start", "globalPid", "deviceId", "address", "bytes", "memKind", "memoryOperationType"}) {
    if (!db.HasColumn(kTable, c)) {
      out.warning = db.path() + ": table " + std::string(kTable) + " has no column '" +
                    std::string(c) + "': CUDA memory usage not imported";
      return out;
    }
  }
  const auto spaces = ReadEnum<Space>(schema, "ENUM_CUDA_MEM_KIND", SpaceByName,
                                      {{0, Space::kHost},
                                       {1, Space::kHost},
                                       {2, Space::kDevice},
                                       {3, Space::kDevice},
                                       {4, Space::kManaged},
                                       {5, Space::kDevice},
                                       {6, Space::kManaged},
                                       {7, Space::kUnknown}});
  const auto operations =
      ReadEnum<Operation>(schema, "ENUM_CUDA_DEV_MEM_EVENT_OPER", OperationByName,
                          {{0, Operation::kAlloc}, {1, Operation::kFree}});

  SqliteStatement st;
  std::string error;
  if (!schema->Query(schema->Select(kTable, {"start", "globalPid", "deviceId", "address", "bytes",
                                             "memKind", "memoryOperationType"}),
                     &st, &error)) {
    out.warning = error + ": CUDA memory usage not imported";
    return out;
  }
  const int start = st.Column("start"), pid = st.Column("globalPid"),
            device = st.Column("deviceId"), address = st.Column("address"),
            bytes = st.Column("bytes"), kind = st.Column("memKind"),
            oper = st.Column("memoryOperationType");
  std::vector<Row> rows;
  auto skip = [&](int64_t global_pid, const char* why) {
    ++out.counters[NsysPid(global_pid)][std::string("import_memory_events_skipped_") + why];
  };
  while (st.Step()) {
    if (st.IsNull(pid)) {
      ++out.rows_without_pid;
      continue;
    }
    const int64_t g = st.Int(pid);
    if (st.IsNull(start) || st.IsNull(address) || st.IsNull(bytes) || st.IsNull(kind) ||
        st.IsNull(oper)) {
      skip(g, "null");
      continue;
    }
    Row r;
    r.ts = static_cast<uint64_t>(std::max<int64_t>(0, st.Int(start)));
    r.global_pid = g;
    r.device = st.IsNull(device) ? -1 : st.Int(device);
    r.address = static_cast<uint64_t>(st.Int(address));
    r.bytes = st.Int(bytes);
    const auto s = spaces.find(st.Int(kind));
    r.space = s == spaces.end() ? Space::kUnknown : s->second;
    const auto o = operations.find(st.Int(oper));
    r.op = o == operations.end() ? Operation::kUnknown : o->second;
    if (r.bytes < 0) {
      skip(g, "negative_bytes");
    } else if (r.op == Operation::kUnknown) {
      skip(g, "operation");
    } else if (r.op == Operation::kAlloc && r.space == Space::kUnknown) {
      skip(g, "memory_kind");
    } else if (r.op == Operation::kAlloc && r.space != Space::kHost && r.device < 0) {
      skip(g, "no_device");
    } else {
      rows.push_back(r);
    }
  }
  if (!schema->Finish(st, kTable, &error)) {
    out.warning = error + ": CUDA memory usage after that row not imported";
  }

  // Running totals in time order (rows of one timestamp in table order).
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.ts < b.ts; });
  std::map<std::pair<int64_t, uint64_t>, Live> live;  // (globalPid, address)
  std::map<std::tuple<int64_t, int64_t, Space>, int64_t> totals;
  for (const Row& r : rows) {
    const uint32_t p = NsysPid(r.global_pid);
    Live changed;
    if (r.op == Operation::kAlloc) {
      changed = {r.space == Space::kHost ? -1 : r.device, r.space, r.bytes};
      auto [it, added] = live.try_emplace(std::pair{r.global_pid, r.address}, changed);
      if (!added) {
        // A second allocation at a live address: the free between was not
        // recorded; the old one is gone.
        ++out.counters[p]["import_memory_allocs_over_live"];
        totals[{r.global_pid, it->second.device, it->second.space}] -= it->second.bytes;
        it->second = changed;
      }
      totals[{r.global_pid, changed.device, changed.space}] += changed.bytes;
    } else {
      auto it = live.find({r.global_pid, r.address});
      if (it == live.end()) {
        ++out.counters[p]["import_memory_frees_unmatched"];
        continue;
      }
      changed = it->second;
      live.erase(it);
      totals[{r.global_pid, changed.device, changed.space}] -= changed.bytes;
    }
    MemoryUsageSample m;
    m.ts_ns = r.ts;
    m.device = changed.device;
    m.allocated = totals[{r.global_pid, changed.device, changed.space}];
    m.managed = changed.space == Space::kManaged;
    out.samples[p].push_back(m);
  }
  return out;
}

}  // namespace tracer::analysis::importers
