#include "libtracer/analysis/importers/nsys_schema.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "libtracer/analysis/importers/nsys_global_id.h"
#include "libtracer/analysis/importers/prefetched_rows.h"
#include "libtracer/analysis/importers/sqlite_table_scan.h"

namespace tracer::analysis::importers {
namespace {
constexpr uint32_t kNotInterned = std::numeric_limits<uint32_t>::max();
}  // namespace

const std::vector<std::string_view>& NvtxOptionalColumns() {
  static const std::vector<std::string_view> kColumns = {
      "text",        "textId",     "domainId",    "category",    "color",      "endGlobalTid",
      "uint64Value", "int64Value", "doubleValue", "uint32Value", "int32Value", "floatValue"};
  return kColumns;
}

bool NsysSchema::OpenExport(const std::string& path, std::string* error) {
  if (!db_.Open(path, error)) return false;
  if (!LoadStrings(error)) return false;
  static constexpr std::string_view kTables[] = {
      "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
      "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS"};
  if (std::none_of(std::begin(kTables), std::end(kTables),
                   [&](std::string_view t) { return db_.HasTable(t); })) {
    *error = path +
             ": not an nsys export: none of the tables CUPTI_ACTIVITY_KIND_KERNEL, "
             "CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_MEMCPY, "
             "CUPTI_ACTIVITY_KIND_MEMSET, NVTX_EVENTS";
    return false;
  }
  return true;
}

ApiDomain NsysSchema::ApiDomainOf(const SqliteStatement& st, int event_class, uint32_t name_id) {
  return ApiDomainOf(!st.IsNull(event_class), st.Int(event_class), name_id);
}

ApiDomain NsysSchema::ApiDomainOf(bool has_class, int64_t event_class, uint32_t name_id) {
  if (has_class) {
    // ENUM_NSYS_EVENT_CLASS: 0 CUDA runtime, 1 CUDA driver.
    return event_class == 1 ? ApiDomain::kDriver : ApiDomain::kRuntime;
  }
  const std::string_view name = strings_->Get(name_id);
  return name.starts_with("cu") && !name.starts_with("cuda") ? ApiDomain::kDriver
                                                             : ApiDomain::kRuntime;
}

std::string NsysSchema::Select(std::string_view table, const std::vector<std::string_view>& columns,
                               const std::vector<std::string_view>& optional) {
  std::string sql = "SELECT ";
  auto add = [&](std::string expression) {
    if (sql.size() > 7) sql += ", ";
    sql += expression;
  };
  for (std::string_view c : columns)
    add("\"" + std::string(c) + "\" AS \"" + std::string(c) + "\"");
  for (std::string_view c : optional) add(Optional(table, c));
  return sql + " FROM \"" + std::string(table) + "\"";
}

std::string NsysSchema::Optional(std::string_view table, std::string_view column) {
  const std::string quoted = "\"" + std::string(column) + "\"";
  return (db_.HasColumn(table, column) ? quoted : "NULL") + " AS " + quoted;
}

bool NsysSchema::Require(std::string_view table, std::initializer_list<std::string_view> columns,
                         std::string* error) {
  for (std::string_view c : columns) {
    if (!db_.HasColumn(table, c)) {
      *error = db_.path() + ": not an nsys export: table " + std::string(table) +
               " has no column '" + std::string(c) + "'";
      return false;
    }
  }
  return true;
}

bool NsysSchema::Query(const std::string& sql, SqliteStatement* st, std::string* error) {
  *st = db_.Prepare(sql, error);
  return st->valid();
}

bool NsysSchema::Finish(const SqliteStatement& st, std::string_view table, std::string* error) {
  if (st.ok()) return true;
  *error = db_.path() + ": error reading table " + std::string(table) + ": " + db_.LastError();
  return false;
}

bool NsysSchema::LoadStrings(std::string* error) {
  if (!db_.HasTable("StringIds")) {
    *error = db_.path() + ": not an nsys export: no table StringIds";
    return false;
  }
  if (!Require("StringIds", {"id", "value"}, error)) return false;
  SqliteStatement st;
  if (!Query(Select("StringIds", {"id", "value"}), &st, error)) return false;
  const int id_col = st.Column("id"), value_col = st.Column("value");
  std::vector<std::pair<int64_t, std::string>> rows;
  int64_t max_id = -1;
  while (st.Step()) {
    const int64_t id = st.Int(id_col);
    if (id < 0) continue;
    rows.emplace_back(id, std::string(st.Text(value_col)));
    max_id = std::max(max_id, id);
  }
  // Ids are dense in the 2020 exports but sparse in schema 3.x (126 strings
  // up to id 3,436,172 in h100_2gpu_mfu.sqlite): index by id only when that
  // costs little memory.
  if (max_id >= 0 && static_cast<uint64_t>(max_id) <= 4 * rows.size() + 4096) {
    nsys_strings_.resize(max_id + 1);
    for (auto& [id, text] : rows) nsys_strings_[id] = std::move(text);
  } else {
    for (auto& [id, text] : rows) sparse_strings_[id] = strings_->Intern(text);
  }
  interned_.assign(nsys_strings_.size(), kNotInterned);
  return Finish(st, "StringIds", error);
}

uint32_t NsysSchema::String(int64_t nsys_id) {
  if (!sparse_strings_.empty()) {
    CachedString& cached = sparse_cache_[static_cast<uint64_t>(nsys_id) % std::size(sparse_cache_)];
    if (cached.global != kNotInterned && cached.id == nsys_id) return cached.global;
    auto it = sparse_strings_.find(nsys_id);
    if (it != sparse_strings_.end()) {
      cached = {nsys_id, it->second};
      return it->second;
    }
  }
  if (nsys_id < 0 || static_cast<size_t>(nsys_id) >= nsys_strings_.size()) {
    return strings_->Intern("[unknown string " + std::to_string(nsys_id) + "]");
  }
  uint32_t& slot = interned_[nsys_id];
  if (slot == kNotInterned) slot = strings_->Intern(nsys_strings_[nsys_id]);
  return slot;
}

std::shared_ptr<const SqliteFileMap> NsysSchema::MapForScan() {
  if (!db_.Exec("BEGIN") || !db_.Exec("SELECT count(*) FROM sqlite_master")) return nullptr;
  auto file = std::make_shared<SqliteFileMap>();
  std::string why;
  if (!file->Open(db_.path(), &why)) return nullptr;
  return file;
}

bool NsysSchema::StartScanOf(std::string_view table, ScanRead read, PrefetchedRows* rows) {
  if (read.file == nullptr) return false;
  std::vector<std::string> columns;
  std::vector<ScanType> types;
  auto in = [](const std::vector<std::string_view>& list, std::string_view name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  for (std::string_view n : read.names) {
    // A column the table lacks ("" to the plan): sql selects NULL for it.
    columns.emplace_back(db_.HasColumn(table, n) ? n : std::string_view());
    types.push_back(in(read.texts, n)     ? ScanType::kText
                    : in(read.doubles, n) ? ScanType::kDouble
                                          : ScanType::kInt);
  }
  std::string why;
  if (!PlanTableScan(&db_, table, columns, types, &read.plan, &why)) return false;
  read.path = db_.path();
  return rows->StartScan(std::move(read));
}

NsysSchema::TargetInfo NsysSchema::ReadTargetInfo(bool scan_devices) {
  TargetInfo info;
  std::string ignored;
  if (db_.HasColumn("TARGET_INFO_SYSTEM_ENV", "name") &&
      db_.HasColumn("TARGET_INFO_SYSTEM_ENV", "value")) {
    SqliteStatement st;
    if (Query("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' LIMIT 1", &st,
              &ignored) &&
        st.Step() && !st.IsNull(0)) {
      info.host = std::string(st.Text(0));
    }
  }
  if (!scan_devices) return info;
  // One scan of each GPU activity table, grouped: distinct (pid, device)
  // pairs only are held.
  for (const char* table :
       {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    if (!db_.HasColumn(table, "globalPid") || !db_.HasColumn(table, "deviceId")) continue;
    SqliteStatement st;
    if (!Query(std::string("SELECT DISTINCT globalPid, deviceId FROM ") + table, &st, &ignored)) {
      continue;
    }
    while (st.Step()) {
      if (st.IsNull(0) || st.IsNull(1)) continue;
      const uint32_t pid = NsysPid(st.Int(0));
      NoteDevice(pid, st.Int(1), &info);
    }
  }
  return info;
}

void NsysSchema::FillHeader(const TargetInfo& info, uint32_t pid, HeaderInfo* header) {
  if (header->host.empty()) header->host = info.host;
  auto it = info.device_by_pid.find(pid);
  if (it != info.device_by_pid.end() && it->second >= 0)
    header->device = std::to_string(it->second);
}

}  // namespace tracer::analysis::importers
