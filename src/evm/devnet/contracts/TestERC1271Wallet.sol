// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title TestERC1271Wallet
/// @notice A minimal TEST contract wallet: it accepts a signature (EIP-1271) iff the signature is a
///         canonical 65-byte ECDSA signature of the given digest by its owner.
/// @dev    Placed with `anvil_setCode`, so no constructor runs: the owner lives in storage slot 0
///         and is set once with `setOwner` (whoever calls it first; this is a test contract).
contract TestERC1271Wallet {
    bytes4 private constant MAGIC_VALUE = 0x1626ba7e;
    bytes4 private constant INVALID_VALUE = 0xffffffff;
    uint256 private constant SECP256K1_HALF_ORDER =
        0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    address public owner;

    event OwnerSet(address indexed owner);

    function setOwner(address newOwner) external {
        require(owner == address(0), "TestERC1271Wallet: owner already set");
        require(newOwner != address(0), "TestERC1271Wallet: zero owner");
        owner = newOwner;
        emit OwnerSet(newOwner);
    }

    function isValidSignature(bytes32 digest, bytes calldata signature)
        external
        view
        returns (bytes4)
    {
        if (signature.length != 65) {
            return INVALID_VALUE;
        }
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > SECP256K1_HALF_ORDER || (v != 27 && v != 28)) {
            return INVALID_VALUE;
        }
        address recovered = ecrecover(digest, v, r, s);
        if (recovered == address(0) || recovered != owner) {
            return INVALID_VALUE;
        }
        return MAGIC_VALUE;
    }
}
