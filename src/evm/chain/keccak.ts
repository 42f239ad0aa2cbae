/** keccak256 for every verify's hashes at a third of viem's cost (OpenSSL's SHA-3 pads
 * differently); tested equal to viem's. */
// biome-ignore-all lint/style/noNonNullAssertion: every index here is a constant within its array
import type { Hex } from "viem";

const RATE = 136;
const ROUNDS = 24;

/** ι's round constants, as low and high 32-bit words, from Keccak's LFSR. */
const RC = new Int32Array(2 * ROUNDS);
{
  let r = 1;
  for (let round = 0; round < ROUNDS; round++) {
    let constant = 0n;
    for (let j = 0; j < 7; j++) {
      if (r & 1) constant |= 1n << BigInt((1 << j) - 1);
      r = r & 0x80 ? (r << 1) ^ 0x171 : r << 1;
    }
    RC[2 * round] = Number(constant & 0xffffffffn) | 0;
    RC[2 * round + 1] = Number(constant >> 32n) | 0;
  }
}

const state = new Int32Array(50);
/** Keccak-f[1600] on (low, high) 32-bit word lanes, unrolled: a loop over tables runs at half speed. */
function permute(s: Int32Array): void {
  for (let round = 0; round < ROUNDS; round++) {
    // θ: each lane takes the parity of the two columns beside it.
    const c0 = s[0]! ^ s[10]! ^ s[20]! ^ s[30]! ^ s[40]!;
    const c1 = s[1]! ^ s[11]! ^ s[21]! ^ s[31]! ^ s[41]!;
    const c2 = s[2]! ^ s[12]! ^ s[22]! ^ s[32]! ^ s[42]!;
    const c3 = s[3]! ^ s[13]! ^ s[23]! ^ s[33]! ^ s[43]!;
    const c4 = s[4]! ^ s[14]! ^ s[24]! ^ s[34]! ^ s[44]!;
    const c5 = s[5]! ^ s[15]! ^ s[25]! ^ s[35]! ^ s[45]!;
    const c6 = s[6]! ^ s[16]! ^ s[26]! ^ s[36]! ^ s[46]!;
    const c7 = s[7]! ^ s[17]! ^ s[27]! ^ s[37]! ^ s[47]!;
    const c8 = s[8]! ^ s[18]! ^ s[28]! ^ s[38]! ^ s[48]!;
    const c9 = s[9]! ^ s[19]! ^ s[29]! ^ s[39]! ^ s[49]!;
    const d0 = c8 ^ ((c2 << 1) | (c3 >>> 31));
    const d1 = c9 ^ ((c3 << 1) | (c2 >>> 31));
    const d2 = c0 ^ ((c4 << 1) | (c5 >>> 31));
    const d3 = c1 ^ ((c5 << 1) | (c4 >>> 31));
    const d4 = c2 ^ ((c6 << 1) | (c7 >>> 31));
    const d5 = c3 ^ ((c7 << 1) | (c6 >>> 31));
    const d6 = c4 ^ ((c8 << 1) | (c9 >>> 31));
    const d7 = c5 ^ ((c9 << 1) | (c8 >>> 31));
    const d8 = c6 ^ ((c0 << 1) | (c1 >>> 31));
    const d9 = c7 ^ ((c1 << 1) | (c0 >>> 31));
    // ρ and π: each lane, θ applied, rotated into its new place.
    const l0 = s[0]! ^ d0;
    const h0 = s[1]! ^ d1;
    const b0 = l0;
    const b1 = h0;
    const l1 = s[2]! ^ d2;
    const h1 = s[3]! ^ d3;
    const b20 = (l1 << 1) | (h1 >>> 31);
    const b21 = (h1 << 1) | (l1 >>> 31);
    const l2 = s[4]! ^ d4;
    const h2 = s[5]! ^ d5;
    const b40 = (h2 << 30) | (l2 >>> 2);
    const b41 = (l2 << 30) | (h2 >>> 2);
    const l3 = s[6]! ^ d6;
    const h3 = s[7]! ^ d7;
    const b10 = (l3 << 28) | (h3 >>> 4);
    const b11 = (h3 << 28) | (l3 >>> 4);
    const l4 = s[8]! ^ d8;
    const h4 = s[9]! ^ d9;
    const b30 = (l4 << 27) | (h4 >>> 5);
    const b31 = (h4 << 27) | (l4 >>> 5);
    const l5 = s[10]! ^ d0;
    const h5 = s[11]! ^ d1;
    const b32 = (h5 << 4) | (l5 >>> 28);
    const b33 = (l5 << 4) | (h5 >>> 28);
    const l6 = s[12]! ^ d2;
    const h6 = s[13]! ^ d3;
    const b2 = (h6 << 12) | (l6 >>> 20);
    const b3 = (l6 << 12) | (h6 >>> 20);
    const l7 = s[14]! ^ d4;
    const h7 = s[15]! ^ d5;
    const b22 = (l7 << 6) | (h7 >>> 26);
    const b23 = (h7 << 6) | (l7 >>> 26);
    const l8 = s[16]! ^ d6;
    const h8 = s[17]! ^ d7;
    const b42 = (h8 << 23) | (l8 >>> 9);
    const b43 = (l8 << 23) | (h8 >>> 9);
    const l9 = s[18]! ^ d8;
    const h9 = s[19]! ^ d9;
    const b12 = (l9 << 20) | (h9 >>> 12);
    const b13 = (h9 << 20) | (l9 >>> 12);
    const l10 = s[20]! ^ d0;
    const h10 = s[21]! ^ d1;
    const b14 = (l10 << 3) | (h10 >>> 29);
    const b15 = (h10 << 3) | (l10 >>> 29);
    const l11 = s[22]! ^ d2;
    const h11 = s[23]! ^ d3;
    const b34 = (l11 << 10) | (h11 >>> 22);
    const b35 = (h11 << 10) | (l11 >>> 22);
    const l12 = s[24]! ^ d4;
    const h12 = s[25]! ^ d5;
    const b4 = (h12 << 11) | (l12 >>> 21);
    const b5 = (l12 << 11) | (h12 >>> 21);
    const l13 = s[26]! ^ d6;
    const h13 = s[27]! ^ d7;
    const b24 = (l13 << 25) | (h13 >>> 7);
    const b25 = (h13 << 25) | (l13 >>> 7);
    const l14 = s[28]! ^ d8;
    const h14 = s[29]! ^ d9;
    const b44 = (h14 << 7) | (l14 >>> 25);
    const b45 = (l14 << 7) | (h14 >>> 25);
    const l15 = s[30]! ^ d0;
    const h15 = s[31]! ^ d1;
    const b46 = (h15 << 9) | (l15 >>> 23);
    const b47 = (l15 << 9) | (h15 >>> 23);
    const l16 = s[32]! ^ d2;
    const h16 = s[33]! ^ d3;
    const b16 = (h16 << 13) | (l16 >>> 19);
    const b17 = (l16 << 13) | (h16 >>> 19);
    const l17 = s[34]! ^ d4;
    const h17 = s[35]! ^ d5;
    const b36 = (l17 << 15) | (h17 >>> 17);
    const b37 = (h17 << 15) | (l17 >>> 17);
    const l18 = s[36]! ^ d6;
    const h18 = s[37]! ^ d7;
    const b6 = (l18 << 21) | (h18 >>> 11);
    const b7 = (h18 << 21) | (l18 >>> 11);
    const l19 = s[38]! ^ d8;
    const h19 = s[39]! ^ d9;
    const b26 = (l19 << 8) | (h19 >>> 24);
    const b27 = (h19 << 8) | (l19 >>> 24);
    const l20 = s[40]! ^ d0;
    const h20 = s[41]! ^ d1;
    const b28 = (l20 << 18) | (h20 >>> 14);
    const b29 = (h20 << 18) | (l20 >>> 14);
    const l21 = s[42]! ^ d2;
    const h21 = s[43]! ^ d3;
    const b48 = (l21 << 2) | (h21 >>> 30);
    const b49 = (h21 << 2) | (l21 >>> 30);
    const l22 = s[44]! ^ d4;
    const h22 = s[45]! ^ d5;
    const b18 = (h22 << 29) | (l22 >>> 3);
    const b19 = (l22 << 29) | (h22 >>> 3);
    const l23 = s[46]! ^ d6;
    const h23 = s[47]! ^ d7;
    const b38 = (h23 << 24) | (l23 >>> 8);
    const b39 = (l23 << 24) | (h23 >>> 8);
    const l24 = s[48]! ^ d8;
    const h24 = s[49]! ^ d9;
    const b8 = (l24 << 14) | (h24 >>> 18);
    const b9 = (h24 << 14) | (l24 >>> 18);
    // χ: each row mixes with its neighbours; ι marks the round.
    s[0] = b0 ^ (~b2 & b4);
    s[1] = b1 ^ (~b3 & b5);
    s[2] = b2 ^ (~b4 & b6);
    s[3] = b3 ^ (~b5 & b7);
    s[4] = b4 ^ (~b6 & b8);
    s[5] = b5 ^ (~b7 & b9);
    s[6] = b6 ^ (~b8 & b0);
    s[7] = b7 ^ (~b9 & b1);
    s[8] = b8 ^ (~b0 & b2);
    s[9] = b9 ^ (~b1 & b3);
    s[10] = b10 ^ (~b12 & b14);
    s[11] = b11 ^ (~b13 & b15);
    s[12] = b12 ^ (~b14 & b16);
    s[13] = b13 ^ (~b15 & b17);
    s[14] = b14 ^ (~b16 & b18);
    s[15] = b15 ^ (~b17 & b19);
    s[16] = b16 ^ (~b18 & b10);
    s[17] = b17 ^ (~b19 & b11);
    s[18] = b18 ^ (~b10 & b12);
    s[19] = b19 ^ (~b11 & b13);
    s[20] = b20 ^ (~b22 & b24);
    s[21] = b21 ^ (~b23 & b25);
    s[22] = b22 ^ (~b24 & b26);
    s[23] = b23 ^ (~b25 & b27);
    s[24] = b24 ^ (~b26 & b28);
    s[25] = b25 ^ (~b27 & b29);
    s[26] = b26 ^ (~b28 & b20);
    s[27] = b27 ^ (~b29 & b21);
    s[28] = b28 ^ (~b20 & b22);
    s[29] = b29 ^ (~b21 & b23);
    s[30] = b30 ^ (~b32 & b34);
    s[31] = b31 ^ (~b33 & b35);
    s[32] = b32 ^ (~b34 & b36);
    s[33] = b33 ^ (~b35 & b37);
    s[34] = b34 ^ (~b36 & b38);
    s[35] = b35 ^ (~b37 & b39);
    s[36] = b36 ^ (~b38 & b30);
    s[37] = b37 ^ (~b39 & b31);
    s[38] = b38 ^ (~b30 & b32);
    s[39] = b39 ^ (~b31 & b33);
    s[40] = b40 ^ (~b42 & b44);
    s[41] = b41 ^ (~b43 & b45);
    s[42] = b42 ^ (~b44 & b46);
    s[43] = b43 ^ (~b45 & b47);
    s[44] = b44 ^ (~b46 & b48);
    s[45] = b45 ^ (~b47 & b49);
    s[46] = b46 ^ (~b48 & b40);
    s[47] = b47 ^ (~b49 & b41);
    s[48] = b48 ^ (~b40 & b42);
    s[49] = b49 ^ (~b41 & b43);
    s[0] ^= RC[2 * round]!;
    s[1] ^= RC[2 * round + 1]!;
  }
}

/** XORs `length` bytes of `data` from `offset` into the state, little-endian per 32-bit word. */
function absorb(s: Int32Array, data: Uint8Array, offset: number, length: number): void {
  let i = 0;
  for (; i + 4 <= length; i += 4) {
    const at = offset + i;
    s[i >> 2] ^= data[at]! | (data[at + 1]! << 8) | (data[at + 2]! << 16) | (data[at + 3]! << 24);
  }
  for (; i < length; i++) s[i >> 2] ^= data[offset + i]! << (8 * (i & 3));
}

/** keccak256 of `data`: 32 bytes. */
export function keccak256Bytes(data: Uint8Array): Uint8Array {
  const s = state;
  s.fill(0);
  let offset = 0;
  for (; data.length - offset >= RATE; offset += RATE) {
    absorb(s, data, offset, RATE);
    permute(s);
  }
  const rest = data.length - offset;
  absorb(s, data, offset, rest);
  // Keccak's padding (not SHA-3's): 0x01 after the message, 0x80 in the block's last byte.
  s[rest >> 2] ^= 0x01 << (8 * (rest & 3));
  s[(RATE - 1) >> 2] ^= 0x80 << 24;
  permute(s);
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = (s[i >> 2]! >>> (8 * (i & 3))) & 0xff;
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Lower-case hex of bytes, with 0x. */
export function hexOf(bytes: Uint8Array): Hex {
  let text = "0x";
  for (let i = 0; i < bytes.length; i++) text += HEX[bytes[i]!];
  return text as Hex;
}

/** keccak256 of `data`, as 0x-hex. */
export function keccak256Hex(data: Uint8Array): Hex {
  return hexOf(keccak256Bytes(data));
}
