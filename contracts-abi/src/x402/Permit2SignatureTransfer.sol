// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

/// @notice The SignatureTransfer half of Uniswap's Permit2, as x402's Permit2 proxies call it.
interface ISignatureTransfer {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external;

    function nonceBitmap(address owner, uint256 wordPos) external view returns (uint256);

    function invalidateUnorderedNonces(uint256 wordPos, uint256 mask) external;

    // solhint-disable-next-line func-name-mixedcase
    function DOMAIN_SEPARATOR() external view returns (bytes32);
}

interface IERC1271 {
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4);
}

/// @title Permit2SignatureTransfer
/// @notice A local-chain stand-in for Permit2 (canonical address 0x000000000022D473030F116dDEE9F6B43aC78BA3)
///         with the part x402's `upto` (and `exact` Permit2) schemes use: signature transfers with a witness.
///         A payer approves this contract on the token once; each payment is then an EIP-712 signature
///         `PermitWitnessTransferFrom(TokenPermissions permitted, address spender, uint256 nonce,
///         uint256 deadline, <witness>)` that only `spender` (msg.sender here) can redeem, at most
///         `permitted.amount`, once (unordered nonce bitmap), until `deadline` (inclusive).
/// @dev Placed with anvil_setCode, so no constructor runs: no immutables, and the EIP-712 domain
///      (name "Permit2", chainId, verifyingContract; no version, as Permit2's) is computed at call time from
///      block.chainid and address(this). The checks run in Permit2's order: deadline, amount, nonce (spent
///      before the signature is checked, so a failing call spends nothing), signature, transfer.
contract Permit2SignatureTransfer is ISignatureTransfer {
    bytes32 private constant DOMAIN_TYPEHASH = keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("Permit2");
    bytes32 public constant TOKEN_PERMISSIONS_TYPEHASH = keccak256("TokenPermissions(address token,uint256 amount)");
    /// the primary type's head; the caller's witness type string completes it (e.g. "Witness witness)TokenPermissions(...)Witness(...)")
    string public constant PERMIT_WITNESS_TRANSFER_FROM_TYPEHASH_STUB =
        "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,";

    /// owner => word position (nonce >> 8) => bits of used nonces (bit nonce & 0xff)
    mapping(address => mapping(uint256 => uint256)) public nonceBitmap;

    event UnorderedNonceInvalidation(address indexed owner, uint256 word, uint256 mask);

    error SignatureExpired(uint256 signatureDeadline);
    error InvalidAmount(uint256 maxAmount);
    error InvalidNonce();
    error InvalidSignature();
    error InvalidSignatureLength();
    error InvalidSigner();
    error InvalidContractSignature();
    error TransferFailed();

    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, block.chainid, address(this)));
    }

    /// @notice Move `transferDetails.requestedAmount` (at most the signed amount) of the signed token from
    ///         `owner` to `transferDetails.to`, on `owner`'s signature over the permit, msg.sender as spender,
    ///         and the caller's witness (its struct hash and type string).
    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external {
        if (block.timestamp > permit.deadline) revert SignatureExpired(permit.deadline);
        if (transferDetails.requestedAmount > permit.permitted.amount) revert InvalidAmount(permit.permitted.amount);
        _useUnorderedNonce(owner, permit.nonce);

        bytes32 typeHash = keccak256(abi.encodePacked(PERMIT_WITNESS_TRANSFER_FROM_TYPEHASH_STUB, witnessTypeString));
        bytes32 permittedHash = keccak256(abi.encode(TOKEN_PERMISSIONS_TYPEHASH, permit.permitted.token, permit.permitted.amount));
        bytes32 structHash = keccak256(abi.encode(typeHash, permittedHash, msg.sender, permit.nonce, permit.deadline, witness));
        _verify(keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash)), owner, signature);

        _transferFrom(permit.permitted.token, owner, transferDetails.to, transferDetails.requestedAmount);
    }

    /// @notice Mark the nonces set in `mask` of word `wordPos` used for the caller (cancels signed permits).
    function invalidateUnorderedNonces(uint256 wordPos, uint256 mask) external {
        nonceBitmap[msg.sender][wordPos] |= mask;
        emit UnorderedNonceInvalidation(msg.sender, wordPos, mask);
    }

    function _useUnorderedNonce(address owner, uint256 nonce) private {
        uint256 bit = 1 << (nonce & 0xff);
        uint256 word = nonceBitmap[owner][nonce >> 8];
        if (word & bit != 0) revert InvalidNonce();
        nonceBitmap[owner][nonce >> 8] = word | bit;
    }

    /// an EOA's 65-byte (r, s, v) or 64-byte EIP-2098 (r, vs) signature, or a contract's EIP-1271 answer
    function _verify(bytes32 digest, address claimedSigner, bytes calldata signature) private view {
        if (claimedSigner.code.length > 0) {
            if (IERC1271(claimedSigner).isValidSignature(digest, signature) != IERC1271.isValidSignature.selector) revert InvalidContractSignature();
            return;
        }
        bytes32 r;
        bytes32 s;
        uint8 v;
        if (signature.length == 65) {
            r = bytes32(signature[0:32]);
            s = bytes32(signature[32:64]);
            v = uint8(signature[64]);
        } else if (signature.length == 64) {
            r = bytes32(signature[0:32]);
            bytes32 vs = bytes32(signature[32:64]);
            s = vs & bytes32(uint256(type(uint256).max >> 1));
            v = uint8(uint256(vs) >> 255) + 27;
        } else {
            revert InvalidSignatureLength();
        }
        address signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) revert InvalidSignature();
        if (signer != claimedSigner) revert InvalidSigner();
    }

    /// token.transferFrom with this contract as the spender: the token's own revert is passed on; a token
    /// without code, or one answering false, fails
    function _transferFrom(address token, address from, address to, uint256 amount) private {
        if (token.code.length == 0) revert TransferFailed();
        (bool ok, bytes memory data) = token.call(abi.encodeWithSelector(0x23b872dd, from, to, amount));
        if (!ok) {
            if (data.length == 0) revert TransferFailed();
            assembly {
                revert(add(data, 32), mload(data))
            }
        }
        if (data.length != 0 && (data.length != 32 || abi.decode(data, (uint256)) != 1)) revert TransferFailed();
    }
}
