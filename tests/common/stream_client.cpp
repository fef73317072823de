#include "tests/common/stream_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>

namespace dashcam::testing {

using Clock = std::chrono::steady_clock;

StreamClient::StreamClient(std::uint16_t port, StreamClientOptions options) : options_(options) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  if (options_.receive_buffer > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &options_.receive_buffer, sizeof(int));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return;
  }
  fd_ = fd;
}

StreamClient::~StreamClient() {
  Close();
}

void StreamClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool StreamClient::SendGet(std::string_view target, std::string_view extra_headers) {
  if (fd_ < 0) return false;
  header_done_ = complete_ = in_chunk_ = chunked_ = false;
  status_ = 0;
  headers_.clear();
  body_.clear();
  content_length_ = -1;
  chunk_left_ = 0;
  std::string req = "GET " + std::string(target) + " HTTP/1." +
                    std::to_string(options_.http_minor) + "\r\nHost: 127.0.0.1\r\n" +
                    std::string(extra_headers) + "\r\n";
  for (std::size_t sent = 0; sent < req.size();) {
    const ssize_t n = ::send(fd_, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

bool StreamClient::Fill(std::chrono::milliseconds timeout) {
  if (fd_ < 0 || closed_) return false;
  pollfd p{fd_, POLLIN, 0};
  const int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (r <= 0) return false;
  char buf[64 * 1024];
  const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
  if (n <= 0) {
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    closed_ = true;
    return false;
  }
  raw_bytes_ += static_cast<std::uint64_t>(n);
  in_.append(buf, static_cast<std::size_t>(n));
  return true;
}

bool StreamClient::ParseHeader() {
  const std::size_t end = in_.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  const std::string head = in_.substr(0, end);
  in_.erase(0, end + 4);
  std::size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.size() >= 12) status_ = std::atoi(status_line.c_str() + 9);
  while (line_end != std::string::npos) {
    const std::size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string line = head.substr(start, line_end - start);
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    headers_[name] = value;
  }
  chunked_ = headers_.count("transfer-encoding") &&
             headers_["transfer-encoding"].find("chunked") != std::string::npos;
  if (headers_.count("content-length")) content_length_ = std::stoll(headers_["content-length"]);
  header_done_ = true;
  return true;
}

void StreamClient::DecodeBody() {
  if (!chunked_) {
    if (content_length_ >= 0) {
      const auto want = static_cast<std::size_t>(content_length_) - body_.size();
      const std::size_t take = std::min(want, in_.size());
      body_.append(in_, 0, take);
      in_.erase(0, take);
      complete_ = body_.size() == static_cast<std::size_t>(content_length_);
    } else {
      body_ += in_;  // HTTP/1.0 style: the body ends when the connection does
      in_.clear();
      complete_ = closed_;
    }
    return;
  }
  while (!complete_) {
    if (in_chunk_) {
      const std::size_t take = std::min<std::uint64_t>(chunk_left_, in_.size());
      body_.append(in_, 0, take);
      in_.erase(0, take);
      chunk_left_ -= take;
      if (chunk_left_ > 0) return;
      if (in_.size() < 2) return;  // the chunk's CRLF
      in_.erase(0, 2);
      in_chunk_ = false;
      continue;
    }
    const std::size_t eol = in_.find("\r\n");
    if (eol == std::string::npos) return;
    const std::uint64_t size = std::stoull(in_.substr(0, eol), nullptr, 16);
    if (size == 0) {
      if (in_.size() < eol + 4) return;  // "0\r\n\r\n" (no trailers here)
      in_.erase(0, eol + 4);
      complete_ = true;
      return;
    }
    in_.erase(0, eol + 2);
    chunk_left_ = size;
    in_chunk_ = true;
  }
}

bool StreamClient::ReadHeader(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!header_done_) {
    if (ParseHeader()) break;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || !Fill(left)) return false;
  }
  DecodeBody();
  return true;
}

bool StreamClient::ReadSome(std::chrono::milliseconds timeout) {
  const bool got = Fill(timeout);
  if (header_done_ || ParseHeader()) DecodeBody();
  return got;
}

bool StreamClient::ReadUntil(const std::function<bool(const std::string&)>& done,
                             std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  if (!header_done_ && !ReadHeader(timeout)) return false;
  while (!done(body_) && !complete_ && !closed_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    Fill(left);
    DecodeBody();
  }
  return done(body_);
}

bool StreamClient::ReadToEnd(std::chrono::milliseconds timeout) {
  ReadUntil([](const std::string&) { return false; }, timeout);
  return complete_ || closed_;
}

}  // namespace dashcam::testing
