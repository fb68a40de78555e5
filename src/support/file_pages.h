// Pages of a private file mapping that nothing writes through (a loaded
// artifact's weights, say): dropped from the process when not needed, brought
// in ahead of use when they are. Both act on page tables only: the file's
// pages stay in the page cache, and a dropped page is read from the file (a
// minor fault when cached) on its next access, as it was before.
//
// Only for bytes never written through the mapping: a written private page
// would revert to the file's contents when dropped.
#pragma once

#include <cstddef>

namespace tessera {

// The system's page size in bytes.
size_t page_bytes();

// Drops the whole pages inside [data, data + bytes) from this process
// (madvise MADV_DONTNEED); the partial pages at either end are kept (they may
// hold other data). Returns whether any page was dropped.
bool drop_file_pages(const void* data, size_t bytes);

// Maps the pages overlapping [data, data + bytes) readable into this process
// now (madvise MADV_POPULATE_READ; on a kernel without it, a read of one byte
// per page), so that the first reads do not fault them in one by one.
void populate_file_pages(const void* data, size_t bytes);

}  // namespace tessera
