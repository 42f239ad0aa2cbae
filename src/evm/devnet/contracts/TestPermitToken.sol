// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {DevnetERC20} from "./DevnetERC20.sol";

/// @title TestPermitToken
/// @notice A TEST token with EIP-2612 `permit` but no EIP-3009: the kind of token x402 pays with
///         through Permit2, and whose approval of Permit2 a facilitator can sponsor
///         (`eip2612GasSponsoring`). Reverts like OpenZeppelin 5's ERC20Permit.
/// @dev    Placed with `anvil_setCode`: name, version and decimals are constants and the EIP-712
///         domain separator is computed on each call from `address(this)` and `block.chainid`.
///         Permit signatures are ECDSA only (no EIP-1271), as in OpenZeppelin's ERC20Permit.
contract TestPermitToken is DevnetERC20 {
    string public constant name = "Permit Token";
    string public constant symbol = "PRMT";
    string public constant version = "1";

    bytes32 private constant EIP712_DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");

    bytes32 public constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    uint256 private constant SECP256K1_HALF_ORDER =
        0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    mapping(address => uint256) private _nonces;

    error ERC2612ExpiredSignature(uint256 deadline);
    error ERC2612InvalidSigner(address signer, address owner);
    error ECDSAInvalidSignature();
    error ECDSAInvalidSignatureS(bytes32 s);

    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(
            abi.encode(
                EIP712_DOMAIN_TYPEHASH,
                keccak256(bytes(name)),
                keccak256(bytes(version)),
                block.chainid,
                address(this)
            )
        );
    }

    /// @notice EIP-5267: the EIP-712 domain, so clients can read name and version from the chain.
    function eip712Domain()
        external
        view
        returns (
            bytes1 fields,
            string memory domainName,
            string memory domainVersion,
            uint256 chainId,
            address verifyingContract,
            bytes32 salt,
            uint256[] memory extensions
        )
    {
        return (hex"0f", name, version, block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    function nonces(address owner) external view returns (uint256) {
        return _nonces[owner];
    }

    /// @notice Sets `spender`'s allowance over `owner`'s tokens to `value`, by `owner`'s signature.
    function permit(
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        if (block.timestamp > deadline) revert ERC2612ExpiredSignature(deadline);
        bytes32 structHash =
            keccak256(abi.encode(PERMIT_TYPEHASH, owner, spender, value, _nonces[owner]++, deadline));
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
        // Malleable (high-s) signatures are refused, so each permit has one valid signature.
        if (uint256(s) > SECP256K1_HALF_ORDER) revert ECDSAInvalidSignatureS(s);
        address signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) revert ECDSAInvalidSignature();
        if (signer != owner) revert ERC2612InvalidSigner(signer, owner);
        _approve(owner, spender, value);
    }
}
