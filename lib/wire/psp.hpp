// SPDX-License-Identifier: BSD-3-Clause
// Encrypted frames: the PSP security header (PSP Architecture Specification
// 1.0) in transport mode, carrying an OpenMRC frame (docs/PROTOCOL.md §12).
//
//   plain:  Eth | IPv6 (| SRv6 outer, SRH) | UDP 4791 | BTH | ext | payload | pad | ICRC
//   sealed: Eth | IPv6 (| SRv6 outer, SRH) | UDP 1000 | PSP (16) | UDP 4791 | BTH |
//           enc(ext | payload | pad) | ICV (16) | ICRC
//
// The outer UDP header is the plain frame's with destination port 1000 (PSP's
// port) and its length grown by the PSP header, the inner UDP header and the
// ICV; its source port still carries EV[31:16] for ECMP, and the flow label
// still carries EV[15:0]. The inner UDP header is the plain frame's own,
// unchanged (so a receiver that strips PSP gets the plain frame back, lengths
// and all). PSP's crypt offset leaves the inner UDP header and BTH readable
// (5 four-byte words) but authenticated: a switch or a receiver sees the
// opcode, DestQP and PSN of every frame, a trim keeps them. The ICRC covers
// the sealed frame as it does a plain one (cheap corruption check first; the
// ICV is what authenticates).
//
// Parsing here is bounds-checked byte walking only; the AES-GCM work is in
// lib/security, the per-QP state in lib/core.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "wire/bth.hpp"
#include "wire/bytes.hpp"
#include "wire/error.hpp"
#include "wire/frame.hpp"
#include "wire/udp.hpp"

namespace omrc::wire {

/// UDP destination port of PSP-encapsulated packets (PSP specification).
inline constexpr std::uint16_t kPspUdpPort = 1000;
/// AES-GCM tag (PSP ICV), bytes.
inline constexpr std::size_t kPspIcvSize = 16;
/// AES-GCM nonce of a PSP frame: its SPI and IV, bytes.
inline constexpr std::size_t kPspNonceSize = 12;
/// Crypt offset of an OpenMRC sealed frame, 4-byte words after the PSP
/// header: the inner UDP header (8) and BTH (12) stay in the clear.
inline constexpr std::uint8_t kPspCryptOffsetWords = 5;

/// PSP version field: the AEAD the SPI's key is for.
enum class PspVersion : std::uint8_t { aes_gcm_128 = 0, aes_gcm_256 = 1 };
[[nodiscard]] constexpr std::size_t psp_key_bytes(PspVersion v) noexcept { return v == PspVersion::aes_gcm_128 ? 16 : 32; }

/// The 16-byte PSP header (no virtualization cookie).
///   0 next header | 1 hdr ext len (= 1) | 2 R(2) crypt offset(6) |
///   3 S D version(4) V 1 | 4 SPI (32) | 8 IV (64)
struct PspHdr {
    static constexpr std::size_t kSize = 16;
    std::uint8_t next_header = kNextHeaderUdp;  ///< what follows: the inner UDP header
    std::uint8_t crypt_offset = kPspCryptOffsetWords;  ///< 4-byte words after the header left in the clear, 0..63
    bool sample = false;                         ///< S: sample this packet (PSP; OpenMRC sends 0)
    bool drop_after_sample = false;              ///< D (PSP; OpenMRC sends 0)
    PspVersion version = PspVersion::aes_gcm_256;
    std::uint32_t spi = 0;                       ///< security parameters index (layout: psp_spi())
    std::uint64_t iv = 0;                        ///< per-SA transmit counter, never 0, never repeated

    // Inline: every sealed frame is encoded once and decoded once (as calls,
    // 1.5 % of bench/engine_cost's 8-byte sealed row).
    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (crypt_offset > 63) return WireError::bad_field;
        out[0] = next_header;
        out[1] = kHdrExtLen;
        out[2] = crypt_offset;  // R bits 0
        out[3] = static_cast<std::uint8_t>((sample ? 0x80 : 0) | (drop_after_sample ? 0x40 : 0) |
                                           (static_cast<std::uint8_t>(version) << 2) | kAlwaysOne);
        store_be32(&out[4], spi);
        store_be64(&out[8], iv);
        return WireError::ok;
    }
    /// Rejects (psp_bad_header) what OpenMRC does not send: a cookie (V),
    /// hdr ext len ≠ 1, the always-one bit clear, a version other than 0/1,
    /// reserved bits set.
    static WireError decode(std::span<const std::uint8_t> in, PspHdr& h) noexcept {
        if (in.size() < kSize) return WireError::psp_truncated;
        if (in[1] != kHdrExtLen || (in[2] & 0xC0) != 0 || (in[3] & kAlwaysOne) == 0 || (in[3] & kVirtCookie) != 0)
            return WireError::psp_bad_header;
        const std::uint8_t ver = (in[3] >> 2) & 0x0F;
        if (ver > static_cast<std::uint8_t>(PspVersion::aes_gcm_256)) return WireError::psp_bad_header;
        h.next_header = in[0];
        h.crypt_offset = in[2] & 0x3F;
        h.sample = (in[3] & 0x80) != 0;
        h.drop_after_sample = (in[3] & 0x40) != 0;
        h.version = static_cast<PspVersion>(ver);
        h.spi = load_be32(&in[4]);
        h.iv = load_be64(&in[8]);
        return WireError::ok;
    }
    friend bool operator==(const PspHdr&, const PspHdr&) = default;

private:
    static constexpr std::uint8_t kAlwaysOne = 0x01;   ///< byte 3 bit 0
    static constexpr std::uint8_t kVirtCookie = 0x02;  ///< byte 3 bit 1 (V)
    static constexpr std::uint8_t kHdrExtLen = 1;      ///< 8-octet units after the first 8: SPI + IV, no cookie
};

// SPI layout (OpenMRC's choice; PSP leaves all but the top bit to the
// receiver): bit 31 selects the receiver's master key (PSP), bits 30..24 the
// key epoch of the connection (rotation, mod 128), bits 23..0 the
// receiver's QPN. The SPI is the receiver's: it names the QP the frame is for
// before anything is decrypted.
inline constexpr std::uint32_t kSpiEpochMask = 0x7F;
[[nodiscard]] constexpr std::uint32_t psp_spi(std::uint32_t key_select, std::uint32_t epoch, std::uint32_t qpn) noexcept {
    return ((key_select & 1u) << 31) | ((epoch & kSpiEpochMask) << 24) | (qpn & 0xFFFFFFu);
}
[[nodiscard]] constexpr std::uint32_t spi_key_select(std::uint32_t spi) noexcept { return spi >> 31; }
[[nodiscard]] constexpr std::uint32_t spi_epoch(std::uint32_t spi) noexcept { return (spi >> 24) & kSpiEpochMask; }
[[nodiscard]] constexpr std::uint32_t spi_qpn(std::uint32_t spi) noexcept { return spi & 0xFFFFFFu; }

/// Where the pieces of a sealed frame lie (offsets from the frame's start).
struct PspLayout {
    /// The headers reach a UDP header with destination port 1000: set by
    /// locate_psp() whatever it then returns (false: not a sealed frame at
    /// all, for the plain parser to judge).
    bool sealed = false;
    FrameMode mode = FrameMode::plain;
    std::uint16_t ip_offset = 0;    ///< the IPv6 header before UDP (inner in srv6 mode)
    std::uint16_t psp_offset = 0;   ///< PSP header (= ip_offset + 40 + 8)
    std::uint16_t bth_offset = 0;   ///< BTH (= psp_offset + 16 + 8)
    std::uint32_t ct_offset = 0;    ///< first encrypted byte (= bth_offset + 12)
    std::uint32_t ct_len = 0;       ///< encrypted bytes: extension headers, payload, pad
    std::uint32_t icrc_offset = 0;  ///< the 4-byte ICRC; the ICV is the 16 bytes before it
    PspHdr psp{};
    std::uint32_t dest_qp = 0;      ///< BTH DestQP (clear text, authenticated)
    std::uint8_t opcode = 0;        ///< BTH opcode, as on the wire
    [[nodiscard]] std::uint32_t icv_offset() const noexcept { return icrc_offset - static_cast<std::uint32_t>(kPspIcvSize); }
    /// Bytes the AES-GCM AAD covers: PSP header, inner UDP header, BTH.
    [[nodiscard]] std::uint32_t aad_len() const noexcept { return ct_offset - psp_offset; }
    // The AES-GCM inputs, as views into the located `frame`: the nonce (SPI
    // and IV as the header carries them), the AAD, the cipher text, the ICV.
    [[nodiscard]] std::span<const std::uint8_t, kPspNonceSize> nonce(std::span<const std::uint8_t> frame) const noexcept {
        return std::span<const std::uint8_t, kPspNonceSize>(frame.data() + psp_offset + 4, kPspNonceSize);
    }
    [[nodiscard]] std::span<const std::uint8_t> aad(std::span<const std::uint8_t> frame) const noexcept {
        return frame.subspan(psp_offset, aad_len());
    }
    [[nodiscard]] std::span<const std::uint8_t> cipher(std::span<const std::uint8_t> frame) const noexcept {
        return frame.subspan(ct_offset, ct_len);
    }
    [[nodiscard]] std::span<const std::uint8_t, kPspIcvSize> icv(std::span<const std::uint8_t> frame) const noexcept {
        return std::span<const std::uint8_t, kPspIcvSize>(frame.data() + icv_offset(), kPspIcvSize);
    }
};

/// Whether a UDP payload starts with a PSP header as OpenMRC sends it (next
/// header UDP, ext len 1, the always-one bit, no cookie): for drivers that
/// carry UDP payloads, not frames (udp), to rebuild the right port. A BTH
/// never reads so (byte 1's low nibble would be TVer 1, which is refused).
[[nodiscard]] inline bool is_psp_payload(std::span<const std::uint8_t> p) noexcept {
    return p.size() >= PspHdr::kSize && p[0] == kNextHeaderUdp && p[1] == 1 && (p[3] & 0x03) == 0x01;
}

/// True when `frame` is IPv6/UDP with destination port 1000 (a PSP frame,
/// to be unsealed, not parsed as a plain one). Never reads past the frame.
[[nodiscard]] bool is_psp_frame(std::span<const std::uint8_t> frame) noexcept;

/// Walks and validates a sealed frame in one pass (the IPv6 chain as parse_frame() does,
/// lengths, the PSP header, the inner UDP header: port 4791 and a length that
/// matches, a whole BTH, room for the ICV and the ICRC) and fills `out`.
/// Does not check the ICRC (icrc_verify over [ip_offset, end)) or the ICV.
WireError locate_psp(std::span<const std::uint8_t> frame, PspLayout& out) noexcept;

/// Bytes a sealed frame adds to a plain one: outer UDP + PSP + ICV.
inline constexpr std::size_t kPspOverhead = UdpHdr::kSize + PspHdr::kSize + kPspIcvSize;
/// A sealed frame's clear part after its IPv6 header before UDP: IPv6, outer
/// UDP, PSP, inner UDP, BTH.
inline constexpr std::size_t kPspClearBytesAfterIp = 40 + UdpHdr::kSize + PspHdr::kSize + UdpHdr::kSize + BthHdr::kSize;

/// A sealed frame's bytes from its outer UDP header to the end of BTH: outer
/// UDP, PSP, inner UDP, BTH.
inline constexpr std::size_t kPspUdpToBthBytes = UdpHdr::kSize + PspHdr::kSize + UdpHdr::kSize + BthHdr::kSize;
using PspUdpToBth = std::array<std::uint8_t, kPspUdpToBthBytes>;
/// Where the AAD (PSP header, inner UDP, BTH) and the nonce (SPI and IV as the
/// header carries them) lie in a PspUdpToBth.
inline constexpr std::size_t kPspAadOffset = UdpHdr::kSize;
inline constexpr std::size_t kPspAadBytes = PspHdr::kSize + UdpHdr::kSize + BthHdr::kSize;
inline constexpr std::size_t kPspNonceOffset = UdpHdr::kSize + 4;

/// Builds a sealed frame's outer UDP to BTH from a plain frame's UDP header
/// and BTH (`udp_bth`, 20 bytes): the outer UDP header (the plain source
/// port, port 1000, the length grown by kPspOverhead, checksum 0), `psp`,
/// then the plain UDP header and BTH unchanged.
void psp_udp_to_bth(std::span<const std::uint8_t, UdpHdr::kSize + BthHdr::kSize> udp_bth, const PspHdr& psp,
                    PspUdpToBth& out) noexcept;

/// Turns a plain frame's headers in `hdr` into a sealed frame's clear part in
/// place: the IPv6 payload lengths grow by kPspOverhead (the outer one's too
/// in srv6 mode) and `tail` is written after the IPv6 header at `ip_offset`.
/// False, with nothing written, when `hdr` is shorter than ip_offset +
/// kPspClearBytesAfterIp.
bool psp_seal_headers(std::span<std::uint8_t> hdr, std::size_t ip_offset, FrameMode mode,
                      const PspUdpToBth& tail) noexcept;

/// Writes the clear-text part of a sealed frame from a plain frame's headers:
/// `plain` holds at least the plain frame's bytes up to the end of BTH,
/// `ip_offset` is where its IPv6 header before UDP starts and `mode` its
/// mode. Copies Ethernet and IPv6 (lengths grown by kPspOverhead), writes the
/// outer UDP header (the plain source port, port 1000), `psp`, then the
/// plain UDP header and BTH unchanged. `out` needs plain-through-BTH +
/// 24 bytes; returns the bytes written (the first encrypted byte's offset),
/// 0 when `out` or `plain` is too short.
std::size_t psp_write_clear_part(std::span<const std::uint8_t> plain, std::size_t ip_offset, FrameMode mode,
                                 const PspHdr& psp, std::span<std::uint8_t> out) noexcept;

/// The reverse, for a located sealed frame: writes the plain frame's bytes
/// up to the end of BTH (lengths shrunk by kPspOverhead, the inner UDP header
/// back in place of the outer one) into `out` and returns how many (the
/// offset where the plain frame's extension headers start), 0 if `out` is too
/// short. The decrypted bytes and an ICRC follow there to make the plain frame.
std::size_t psp_write_plain_part(std::span<const std::uint8_t> sealed, const PspLayout& l,
                                 std::span<std::uint8_t> out) noexcept;

}  // namespace omrc::wire
