// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title TestSmartWallet
/// @notice A minimal TEST smart wallet with one owner: it accepts (EIP-1271) the owner's canonical
///         65-byte ECDSA signature of the hash, and lets the owner make it call anything (to
///         approve Permit2, say). Deployed by TestSmartWalletFactory, constructor and all.
contract TestSmartWallet {
    bytes4 private constant MAGIC_VALUE = 0x1626ba7e;
    bytes4 private constant INVALID_VALUE = 0xffffffff;
    uint256 private constant SECP256K1_HALF_ORDER =
        0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    address public immutable owner;

    error NotOwner();

    constructor(address owner_) {
        owner = owner_;
    }

    receive() external payable {}

    function isValidSignature(bytes32 hash, bytes calldata signature)
        external
        view
        returns (bytes4)
    {
        if (signature.length != 65) return INVALID_VALUE;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > SECP256K1_HALF_ORDER || (v != 27 && v != 28)) return INVALID_VALUE;
        address recovered = ecrecover(hash, v, r, s);
        return recovered != address(0) && recovered == owner ? MAGIC_VALUE : INVALID_VALUE;
    }

    /// @notice Calls `target` with `data` and `value`, as the wallet; only the owner may.
    function execute(address target, uint256 value, bytes calldata data)
        external
        returns (bytes memory result)
    {
        if (msg.sender != owner) revert NotOwner();
        bool success;
        (success, result) = target.call{value: value}(data);
        if (!success) {
            // Pass the callee's revert on unchanged.
            assembly {
                revert(add(result, 0x20), mload(result))
            }
        }
    }
}

/// @title TestSmartWalletFactory
/// @notice Deploys TestSmartWallets with CREATE2, so a wallet's address is known (from its owner
///         and a salt) before it exists: the counterfactual wallets ERC-6492 signatures come from.
///         An ERC-6492 signature names this factory and `createAccount(owner, salt)` as the call
///         that deploys the wallet.
/// @dev    Placed with `anvil_setCode` at a fixed devnet address; it has no storage.
contract TestSmartWalletFactory {
    event AccountCreated(address indexed account, address indexed owner, uint256 salt);

    /// @notice Deploys the wallet of (owner, salt), or returns it if it exists already (so a
    ///         repeated deployment, as ERC-6492 verifiers may make, does not revert).
    function createAccount(address owner, uint256 salt) external returns (address account) {
        account = predictAddress(owner, salt);
        if (account.code.length > 0) return account;
        TestSmartWallet wallet = new TestSmartWallet{salt: bytes32(salt)}(owner);
        account = address(wallet);
        emit AccountCreated(account, owner, salt);
    }

    /// @notice The address createAccount(owner, salt) deploys to.
    function predictAddress(address owner, uint256 salt) public view returns (address) {
        bytes32 initCodeHash =
            keccak256(abi.encodePacked(type(TestSmartWallet).creationCode, abi.encode(owner)));
        return address(
            uint160(
                uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, initCodeHash)))
            )
        );
    }
}
