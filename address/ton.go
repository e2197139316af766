package address

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// TON user-friendly address tags (the first byte).
const (
	tonBounceable    = 0x11
	tonNonBounceable = 0x51
	tonTestOnly      = 0x80 // flag ORed into the tag for testnet-only forms
)

// TON validates a TON address in either of its two forms:
//
//   - user-friendly: 48 characters of base64 or base64url (not a mix)
//     encoding 36 bytes: tag 0x11 (bounceable) or 0x51 (non-bounceable)
//     without the test-only flag, workchain 0x00 or 0xff (-1), the 32-byte
//     account hash and a big-endian CRC16-XMODEM of the first 34 bytes;
//   - raw: "0:" or "-1:" followed by 64 hex digits (no checksum).
func TON(addr string) error {
	if err := precheck(addr); err != nil {
		return err
	}
	if strings.IndexByte(addr, ':') >= 0 {
		return validateTONRaw(addr)
	}
	return validateTONFriendly(addr)
}

// validateTONRaw checks the "workchain:hex" form.
func validateTONRaw(addr string) error {
	wc, hash, _ := strings.Cut(addr, ":")
	if wc != "0" && wc != "-1" {
		return invalid("unsupported workchain %q", clip(wc, 8))
	}
	if len(hash) != 64 {
		return invalid("want 64 hex digits, got %d", len(hash))
	}
	if _, err := hex.DecodeString(hash); err != nil {
		return invalid("bad hex")
	}
	return nil
}

// validateTONFriendly checks the 48-character base64 form.
func validateTONFriendly(addr string) error {
	if len(addr) != 48 {
		return invalid("want 48 characters, got %d", len(addr))
	}
	enc, err := tonEncoding(addr)
	if err != nil {
		return err
	}
	raw, err := enc.DecodeString(addr)
	if err != nil || len(raw) != 36 {
		return invalid("bad base64")
	}
	tag, workchain := raw[0], raw[1]
	switch {
	case tag&tonTestOnly != 0:
		return invalid("testnet-only address")
	case tag != tonBounceable && tag != tonNonBounceable:
		return invalid("unknown tag 0x%02x", tag)
	case workchain != 0x00 && workchain != 0xff:
		return invalid("unsupported workchain %d", int8(workchain))
	}
	if crc16XModem(raw[:34]) != binary.BigEndian.Uint16(raw[34:]) {
		return invalid("bad checksum")
	}
	return nil
}

// tonEncoding picks the base64 alphabet the address is written in. The two
// alphabets differ only in "+/" versus "-_"; an address using both is not
// something any TON wallet produces, so it is refused rather than guessed.
func tonEncoding(addr string) (*base64.Encoding, error) {
	var std, url bool
	for i := 0; i < len(addr); i++ {
		c := addr[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '+' || c == '/':
			std = true
		case c == '-' || c == '_':
			url = true
		default:
			return nil, invalid("invalid character %q", c)
		}
	}
	if std && url {
		return nil, invalid("mixes base64 and base64url characters")
	}
	if url {
		return base64.URLEncoding, nil
	}
	return base64.StdEncoding, nil
}

// crc16XModem is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the checksum of TON user-friendly addresses.
func crc16XModem(data []byte) uint16 {
	var crc uint16
	for _, b := range data {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
