// Disk behind brine-master's bus queue (brine.overflow_mb).
//
// When the queue's memory (brine.max_queue_mb) is full, the reader goes on
// reading the bus and appends what it reads here, so a stalled store holds the
// senders' frames in a file instead of in ZeroMQ's receive pipes, whose bound
// counts messages, not bytes (docs/reliability.md, "Memory: the worst case").
// The frames come back out in the order they went in.
//
// The file is volatile: each segment is created unlinked (O_TMPFILE, or
// mkstemp and unlink at once where the file system has no O_TMPFILE), so a
// killed brine-master leaves nothing behind and its frames here are lost with
// it, like the frames in its memory and in ZeroMQ's (promise 1). SIGTERM
// commits them like the rest of the queue, for as long as its stop bound
// allows; what is left then is saved (SaveTo) as `brine-overflow.saved` in the
// same folder, and the next DiskOverflow there takes that file as its first
// frames, so they are filed before anything newer.
//
// File grammar (the segments and the saved file; integers little-endian):
//   saved   = header *record           (a segment is *record, no header)
//   header  = "BRINEOVF" version       version = uint32, 2
//   record  = magic head_crc received parts dlen blen data_crc damage bytes
//   magic   = "BOR2"
//   head_crc = uint32                  CRC-32 (zlib's) of the 24 bytes from
//                                      received to data_crc
//   received = int64                   arrival time, UTC microseconds
//   parts   = uint32                   ZeroMQ message parts
//   dlen, blen = uint32                lengths of damage and bytes
//   data_crc = uint32                  CRC-32 of damage then bytes
// The live segments leave head_crc and data_crc 0: they are this process's
// own unlinked files, and SaveTo makes the checksums as it writes the saved
// file, off the reader's path (each frame's CRC there slowed the reader).
// Reading a saved file (the constructor), a record whose header fails
// head_crc, whose magic is missing, or whose lengths run past the end is not
// trusted: its length may be the damaged part. The reader skips to the next
// "BOR2" whose header passes its CRC, and the bytes between become one
// quarantined frame (the first 64 KiB kept, the reason naming the offset and
// length). So a damaged length costs the one record it belongs to (plus any
// whose magic was hit too), never those after it. A record with a good header
// whose data fails data_crc is skipped by its (trusted) length and
// quarantined alone. Quarantined parts reach the store's quarantine table
// through the archiver, which logs them; notice() counts them.
//
// The previous version's saved file (version 1, read at upgrade) had no
// header, magic or CRC: record = received parts dlen blen damage bytes, in
// host order (little-endian). It is read record by record; from a length that
// runs past the end, the rest cannot be split and is quarantined as one part.
// A far-future time from such a file is taken as now by the store
// (brine.max_clock_skew_s).
//
// Segments: the data lives in files of at most about max_bytes / 8 each; a
// segment read to its end is closed, which frees its disk. So the disk used is
// at most max_bytes plus one segment, even when the overflow never empties.
//
// Not thread-safe: FrameQueue calls it under its own lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <string>
#include <vector>

namespace brine::master {

struct Frame;

// Appends `frame` to `out` as one record of the grammar above.
void AppendOverflowRecord(std::string& out, const Frame& frame);
// A saved file's header (the grammar's `header`).
[[nodiscard]] std::string OverflowFileHeader();

class DiskOverflow {
 public:
  // The file SaveTo writes, in the overflow's folder.
  static constexpr const char* kSavedName = "brine-overflow.saved";

  // Frames are written to files in `dir`, at most `max_bytes` of them unread.
  // Creates and drops one segment to prove the folder usable; throws
  // std::system_error naming `dir` when it is not. Then takes `dir`/kSavedName
  // when there is one (a regular file of this user; anything else is left and
  // named in notice()): its frames come first, and the name is removed.
  DiskOverflow(std::filesystem::path dir, std::size_t max_bytes);
  ~DiskOverflow();
  DiskOverflow(const DiskOverflow&) = delete;
  DiskOverflow& operator=(const DiskOverflow&) = delete;

  // Appends `frame`. False, with nothing appended, when that would pass
  // max_bytes (unless `over_budget`: for SaveTo at a stop), or when the disk refused a write (full, I/O error): then every
  // append is refused until the overflow has been read empty, and error()
  // says why. Never throws.
  [[nodiscard]] bool Append(const Frame& frame, bool over_budget = false);

  // Moves up to `max_frames` of the oldest frames into `out`, stopping once
  // they hold `max_bytes` (always at least one frame); returns how many.
  // Throws std::system_error when a segment cannot be read.
  std::size_t ReadUpTo(std::size_t max_frames, std::size_t max_bytes, std::vector<Frame>& out);

  // Forgets every frame (after a read error: they cannot be read back).
  void Drop() { Reset(); frames_ = 0; }

  // Writes every unread frame, in order, to `dir`/kSavedName (through a temp
  // name, fsynced, then renamed) and forgets them. Throws std::system_error;
  // then nothing is forgotten.
  void SaveTo();

  // What the constructor found in kSavedName: frames taken, damaged parts
  // taken as quarantined frames (Frame::damage set), and a sentence for the
  // log when there was something to say (empty otherwise).
  [[nodiscard]] std::size_t adopted_frames() const { return adopted_frames_; }
  [[nodiscard]] std::size_t adopted_damaged() const { return adopted_damaged_; }
  [[nodiscard]] const std::string& notice() const { return notice_; }

  [[nodiscard]] bool empty() const { return frames_ == 0; }
  // Whether an append may succeed now: below max_bytes and no write refused.
  [[nodiscard]] bool accepting() const { return error_.empty() && bytes_ < max_bytes_; }
  [[nodiscard]] std::size_t frames() const { return frames_; }
  // Bytes of frames appended and not yet read (their records' size).
  [[nodiscard]] std::size_t bytes() const { return bytes_; }
  // Why appends are refused now; empty while they are taken.
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  struct Segment {
    int fd = -1;
    std::uint64_t end = 0;  // bytes written to it
  };
  [[nodiscard]] int OpenSegment() const;  // throws std::system_error
  bool Flush();                           // writes wbuf_ to the last segment
  bool WriteAll(int fd, std::uint64_t at, const char* data, std::size_t size);
  bool Refuse(const std::string& why);
  void Fill(std::size_t want);  // rbuf_ holds `want` unread bytes afterwards
  void Reset();                 // read empty: drop every segment
  void Adopt();                 // the constructor's taking of kSavedName
  // Append each frame of the saved file `fd` (of `size` bytes) from `at`;
  // false (error_ set) when an append or a read failed.
  bool AdoptRecords(int fd, std::uint64_t at, std::uint64_t size);
  bool AdoptVersion1(int fd, std::uint64_t size);
  // Appends the bytes [at, at + size) of `fd` as a quarantined frame.
  bool AdoptDamage(int fd, std::uint64_t at, std::uint64_t size, const std::string& what);

  const std::filesystem::path dir_;
  const std::size_t max_bytes_;
  const std::size_t segment_bytes_;
  std::deque<Segment> segments_;  // oldest first; appends go to the last
  std::uint64_t read_at_ = 0;     // in the first segment
  std::string wbuf_;              // appended, not yet written to the last segment
  std::string rbuf_;              // read from the segments, not yet parsed
  std::size_t rpos_ = 0;          // parsed up to here in rbuf_
  std::size_t frames_ = 0;
  std::size_t bytes_ = 0;
  std::string error_;
  std::size_t adopted_frames_ = 0;
  std::size_t adopted_damaged_ = 0;
  std::string adopt_damage_;  // the first damaged part's description
  std::string notice_;
};

}  // namespace brine::master
