// gs:// paths: Cloud Storage through its JSON API (io/gcs_client.h). One instance per
// process, created on first use; its credentials are found then (io/gcs_auth.h).
#pragma once

#include "core/status.h"
#include "io/file_system.h"

namespace ic {

Result<FileSystem*> gcs_file_system();

}  // namespace ic
